package controlplane

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
)

// RequestCount returns the API server's own count of requests with the given
// verb ("PATCH", "PUT", ...) on resource and subresource ("" for the object
// itself), summed over every other label of apiserver_request_total. Compare
// two readings to count a controller's writes as the server saw them.
func (cp *ControlPlane) RequestCount(ctx context.Context, verb, resource, subresource string) (int, error) {
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return 0, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	want := []string{`verb="` + verb + `"`, `resource="` + resource + `"`, `subresource="` + subresource + `"`}
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_request_total{") || !containsAll(line, want) {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", line, err)
		}
		total += int(v)
	}
	return total, sc.Err()
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}

// Package apiserver reads and restarts the API server of a control plane
// that the SDK's test kit (testing/controlplane) started, for the SDK's own
// tests and benchmarks: the API server's own request counters (a
// controller's writes as the server saw them) and a restart of
// kube-apiserver over the same etcd. They are not the kit's public
// surface: a user's test asserts what its controller decides, not how many
// requests it took.
package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// RequestCount returns the count, by the API server that cfg reaches, of
// requests with the given verb ("PATCH", "PUT", ...) on resource and
// subresource ("" for the object itself), summed over every other label of
// apiserver_request_total. Compare two readings to count a controller's
// writes as the server saw them.
func RequestCount(ctx context.Context, cfg *rest.Config, verb, resource, subresource string) (int, error) {
	want := []string{`verb="` + verb + `"`, `resource="` + resource + `"`, `subresource="` + subresource + `"`}
	return MetricSum(ctx, cfg, "apiserver_request_total", func(labels string) bool { return containsAll(labels, want) })
}

// MetricSum sums the samples of the API server's (the one cfg reaches, as
// an administrator) own metric name (a counter
// or gauge of its /metrics) whose labels, as written there
// (`{code="403",verb="GET"}`), pass keep; a nil keep sums them all. For
// example, authorization_attempts_total with result!="allowed" counts the
// requests RBAC refused.
func MetricSum(ctx context.Context, cfg *rest.Config, name string, keep func(labels string) bool) (int, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return 0, err
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("scraping the API server's metrics: %w", err)
	}
	total := 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		labels := ""
		if strings.HasPrefix(rest, "{") {
			labels = rest[:strings.LastIndex(rest, "}")+1]
		}
		if keep != nil && !keep(labels) {
			continue
		}
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

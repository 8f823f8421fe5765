package main

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	if _, err := controlplane.AssetsDir(); err != nil {
		controlplane.Start(t) // skips or fails with the standard message
	}
	var out bytes.Buffer
	if err := run(io.Discard, &out); err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	for _, want := range []string{"ResourcesCapped", "TenantDrained", "PoolExhausted", "waiting (no controller for class)", "9 slices: 5 Accepted, 3 Denied, 1 undecided"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out.String())
		}
	}
}

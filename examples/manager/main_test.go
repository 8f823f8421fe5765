package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/sliceclass/sliceclass/conditions"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--class-name", "gold", "--class-name=silver,bronze", "--cap", "cpu=4,memory=8Gi", "--max-concurrent-reconciles", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.classes, ",") != "gold,silver,bronze" || o.workers != 3 || o.caps.Cpu().Value() != 4 || o.metricsAddr != ":8080" || o.probeAddr != ":8081" {
		t.Errorf("parsed %+v", o)
	}
	bad := map[string][]string{
		"no class":       {},
		"reserved class": {"--class-name", "default"},
		"bad class":      {"--class-name", "a b"},
		"duplicate":      {"--class-name", "gold,gold"},
		"bad cap":        {"--class-name", "gold", "--cap", "cpu"},
		"zero workers":   {"--class-name", "gold", "--max-concurrent-reconciles", "0"},
		"unknown flag":   {"--class-name", "gold", "--nope"},
		"stray argument": {"--class-name", "gold", "extra"},
	}
	for name, args := range bad {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("%s: want an error for %v", name, args)
		} else if strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: the error must be one line, got %q", name, err)
		}
	}
}

func TestLeaseName(t *testing.T) {
	a, b := leaseName([]string{"silver", "gold"}), leaseName([]string{"gold", "silver"})
	if a != b {
		t.Errorf("lease name must not depend on flag order: %q vs %q", a, b)
	}
	long := leaseName([]string{strings.Repeat("x", 60), strings.Repeat("y", 60)})
	for _, n := range []string{a, long, leaseName([]string{"gold_1.a"})} {
		if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
			t.Errorf("lease name %q is not a valid DNS label: %v", n, errs)
		}
	}
	if leaseName([]string{"gold"}) == leaseName([]string{"silver"}) {
		t.Error("different class sets must get different leases")
	}
}

func TestRunDecidesOnARealAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := cp.CreateNamespace(ctx, slicetest.DefaultNamespace); err != nil {
		t.Fatal(err)
	}
	o, err := parseFlags([]string{"--class-name", "gold", "--cap", "cpu=4", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, cp.Config) }()

	s := slicetest.NewSlice("big", slicetest.WithClass("gold"), slicetest.WithRequest("cpu", "16"))
	status := s.Status
	if err := cp.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status = status
	if err := cp.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	var got authv1beta1.ResourceSlice
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := cp.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Name}, &got); err != nil {
			return false, err
		}
		return conditions.IsDecided(&got), nil
	})
	if err != nil {
		t.Fatalf("no decision: %v (conditions %+v)", err, got.Status.Conditions)
	}
	if !conditions.IsAccepted(&got) || got.Status.Resources.Cpu().Value() != 4 {
		t.Errorf("want Accepted with cpu capped at 4, got %+v %v", got.Status.Conditions, got.Status.Resources)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("run returned %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("manager did not stop")
	}
}

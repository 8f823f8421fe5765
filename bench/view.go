package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/statusclass/statusclasstest"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// viewPhase measures the status.class view (internal/sliceview/view.go)
// beside the typed slice cache, at each count of -view-n: the cluster
// holds that many realistic, decided slices of class "mem" in namespace
// "mem", each with status.class set, and a memory child (memChild, with
// the example manager's DropUnreadSliceFields) caching all of them runs twice, each a
// fresh process: once with the ResourceSlice CRD as Liqo v1.2.0 ships it
// (no status.class: the SDK does not start the view) and once with the CRD
// declaring status.class (the view caches every slice in the cluster). The
// difference of their heaps after GC, per slice, is the view's cost; the
// first heap less an empty manager's, per slice, the typed slice cache's.
// Run it alone (-view-only): the view caches every slice of the cluster,
// and the counts assume the phase's slices are all there are.
func viewPhase(ctx context.Context, cp *controlplane.ControlPlane, f flags, t *table) error {
	counts, err := parseCounts("view-n", f.viewN)
	if err != nil {
		return err
	}
	slices.Sort(counts)
	counts = slices.Compact(counts)
	if err := cp.CreateNamespace(ctx, "mem"); err != nil {
		return err
	}
	cfgFile, err := writeConfig(cp.Config)
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(cfgFile) }()
	say("view: an empty manager...")
	empty, err := child(cfgFile, 0, true, true)
	if err != nil {
		return err
	}
	t.add("view: empty manager, heap (HeapInuse after GC)", mib(empty.HeapInuse))
	made := 0
	for _, n := range counts {
		// Slices are created with status.class declared, so that the
		// server keeps it.
		if err := statusclasstest.Declare(ctx, cp.Client, cp.Config, true); err != nil {
			return err
		}
		say("view: creating slices %d to %d, status.class set...", made, n-1)
		if err := createClassed(ctx, cp.Client, made, n); err != nil {
			return err
		}
		made = n
		total, err := countSlices(ctx, cp.Client)
		if err != nil {
			return err
		}
		if total != n {
			return fmt.Errorf("view: the cluster holds %d slices, want %d: run the phase alone (-view-only)", total, n)
		}
		say("view: %d slices cached, status.class declared (the view on)...", n)
		on, err := child(cfgFile, n, true, true)
		if err != nil {
			return err
		}
		if err := statusclasstest.Declare(ctx, cp.Client, cp.Config, false); err != nil {
			return err
		}
		say("view: %d slices cached, status.class not declared (the view off)...", n)
		off, err := child(cfgFile, n, true, true)
		if err != nil {
			return err
		}
		typed := bytesPerSlice(off.HeapInuse, empty.HeapInuse, n)
		view := bytesPerSlice(on.HeapInuse, off.HeapInuse, n)
		t.add(fmt.Sprintf("view: heap, %d slices cached, view off / on", n), fmt.Sprintf("%s / %s", mib(off.HeapInuse), mib(on.HeapInuse)))
		t.add(fmt.Sprintf("view: bytes per slice at %d, typed slice cache (trimmed) / status.class view", n),
			fmt.Sprintf("%.0f / %.0f (the view adds %.0f%%)", typed, view, 100*view/typed))
	}
	return nil
}

// createClassed creates slices from to to-1 of namespace "mem", decided
// and of class "mem", as Liqo does (create, then a status PUT) with
// status.class "mem" in the status.
func createClassed(ctx context.Context, c client.Client, from, to int) error {
	return parallel(8, to-from, func(j int) error {
		i := from + j
		rs := realisticSlice("mem", fmt.Sprintf("s-%05d", i), "mem", true)
		rs.Labels[bucketLabel] = strconv.Itoa(i / bucketSize)
		status := *rs.Status.DeepCopy()
		if err := c.Create(ctx, rs); err != nil {
			return err
		}
		rs.Status = status
		raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(rs)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{Object: raw}
		u.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind))
		if err := unstructured.SetNestedField(u.Object, "mem", "status", "class"); err != nil {
			return err
		}
		return c.Status().Update(ctx, u)
	})
}

// countSlices is how many ResourceSlices the cluster holds.
func countSlices(ctx context.Context, c client.Client) (int, error) {
	l := &metav1.PartialObjectMetadataList{}
	l.SetGroupVersionKind(authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind + "List"))
	if err := c.List(ctx, l); err != nil {
		return 0, err
	}
	return len(l.Items), nil
}

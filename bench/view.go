package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// viewPhase measures the status.class view (resourceslice/effective.go)
// beside the typed slice cache, at each count of -view-n: the cluster
// holds that many realistic, decided slices of class "mem" in namespace
// "mem", each with status.class set, and a memory child (memChild, with
// the example manager's TrimCache) caching all of them runs twice, each a
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
		if err := declareStatusClass(ctx, cp, true); err != nil {
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
		if err := declareStatusClass(ctx, cp, false); err != nil {
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

// declareStatusClass adds status.class to the ResourceSlice CRD's schema,
// as a Liqo release newer than the pinned types does, or (on false)
// removes it, and waits until OpenAPI v3 says so: the SDK starts the view
// from what OpenAPI v3 publishes.
func declareStatusClass(ctx context.Context, cp *controlplane.ControlPlane, declared bool) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "resourceslices.authentication.liqo.io"}, &crd); err != nil {
		return err
	}
	changed := false
	for i := range crd.Spec.Versions {
		schema := crd.Spec.Versions[i].Schema.OpenAPIV3Schema
		status := schema.Properties["status"]
		if _, ok := status.Properties["class"]; ok == declared {
			continue
		}
		if declared {
			status.Properties["class"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		} else {
			delete(status.Properties, "class")
		}
		schema.Properties["status"] = status
		changed = true
	}
	if changed {
		if err := cp.Client.Update(ctx, &crd); err != nil {
			return err
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		has, err := publishesStatusClass(dc)
		return err == nil && has == declared, nil
	})
}

// publishesStatusClass reports whether OpenAPI v3 publishes status.class
// in the ResourceSlice schema.
func publishesStatusClass(dc *discovery.DiscoveryClient) (bool, error) {
	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		return false, err
	}
	gv := authv1beta1.GroupVersion
	p, ok := paths["apis/"+gv.Group+"/"+gv.Version]
	if !ok {
		return false, fmt.Errorf("no OpenAPI v3 document for %s", gv)
	}
	doc, err := p.Schema("application/json")
	if err != nil {
		return false, err
	}
	var d struct {
		Components struct {
			Schemas map[string]struct {
				Properties struct {
					Status struct {
						Properties map[string]json.RawMessage `json:"properties"`
					} `json:"status"`
				} `json:"properties"`
				GVK []struct {
					Kind string `json:"kind"`
				} `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return false, err
	}
	for _, s := range d.Components.Schemas {
		for _, g := range s.GVK {
			if g.Kind == authv1beta1.ResourceSliceKind {
				_, ok := s.Properties.Status.Properties["class"]
				return ok, nil
			}
		}
	}
	return false, fmt.Errorf("no %s schema in OpenAPI v3", authv1beta1.ResourceSliceKind)
}

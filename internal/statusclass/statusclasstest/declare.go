// Package statusclasstest changes the ResourceSlice CRD of a test control
// plane as a Liqo release newer than the pinned types does, for the
// integration suite and the bench.
package statusclasstest

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/internal/statusclass"
	"github.com/sliceclass/sliceclass/internal/testwait"
)

// Declare adds status.class to the ResourceSlice CRD's schema (declared)
// or removes it, through c (whose scheme must hold apiextensions/v1), and
// waits until the server cfg reaches publishes it so in OpenAPI v3, where
// the SDK reads it.
func Declare(ctx context.Context, c client.Client, cfg *rest.Config, declared bool) error {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := c.Get(ctx, client.ObjectKey{Name: "resourceslices.authentication.liqo.io"}, &crd); err != nil {
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
		if err := c.Update(ctx, &crd); err != nil {
			return err
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, testwait.Timeout, true, func(context.Context) (bool, error) {
		has, err := statusclass.Published(dc)
		return err == nil && has == declared, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for OpenAPI v3 to publish status.class as declared=%v: %w", declared, err)
	}
	return nil
}

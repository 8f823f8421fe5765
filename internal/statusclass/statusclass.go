// Package statusclass says whether the API server's ResourceSlice schema
// declares status.class, which Liqo releases newer than the pinned v1.2.0
// types add: the SDK starts its status.class view only then, and the test
// suites and the bench wait for it after changing the CRD
// (statusclasstest). It reads OpenAPI v3 discovery, which every
// authenticated client may read.
package statusclass

import (
	"encoding/json"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/client-go/openapi"
)

// Published reports whether the ResourceSlice schema the server publishes
// in OpenAPI v3 declares status.class. No document or no ResourceSlice
// schema is an error, not a no.
func Published(dc interface{ OpenAPIV3() openapi.Client }) (bool, error) {
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
	return inSchema(doc)
}

// inSchema reports whether an OpenAPI v3 document's ResourceSlice schema
// declares status.class.
func inSchema(doc []byte) (bool, error) {
	type schema struct {
		Properties map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"properties"`
		GVK []struct {
			Group string `json:"group"`
			Kind  string `json:"kind"`
		} `json:"x-kubernetes-group-version-kind"`
	}
	var d struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		return false, fmt.Errorf("decoding the OpenAPI document: %w", err)
	}
	for _, s := range d.Components.Schemas {
		for _, g := range s.GVK {
			if g.Group == authv1beta1.GroupVersion.Group && g.Kind == authv1beta1.ResourceSliceKind {
				_, ok := s.Properties["status"].Properties["class"]
				return ok, nil
			}
		}
	}
	return false, fmt.Errorf("no %s schema in the OpenAPI document", authv1beta1.ResourceSliceKind)
}

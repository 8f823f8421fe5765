package resourceslice

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// statusWriter sends a slice's status patch. On success rs holds what the
// API server now holds: the patch was computed from the slice rs was built
// from and applied under its resourceVersion, so the server's object is rs
// with the new resourceVersion.
type statusWriter interface {
	patchStatus(ctx context.Context, rs *authv1beta1.ResourceSlice, p client.Patch, owner client.FieldOwner) error
}

// clientStatus writes through a client.Client, which decodes the whole
// answer into rs: the path of a Reconciler built with NewReconciler, whose
// client may be the test harness's or one the user wrapped.
type clientStatus struct{ c client.Client }

func (w clientStatus) patchStatus(ctx context.Context, rs *authv1beta1.ResourceSlice, p client.Patch, owner client.FieldOwner) error {
	return w.c.Status().Patch(ctx, rs, p, owner)
}

// restStatus writes through a REST client of the manager's config and HTTP
// client (same transport, same authentication) and reads only the answer's
// metadata.resourceVersion: decoding the whole slice the API server sends
// back (CSR and certificates included) was nine tenths of a status write's
// CPU, and the answer tells nothing else the controller does not know.
type restStatus struct{ rest rest.Interface }

// newRESTStatus builds the status writer of a class controller the SDK
// built from mgr.
func newRESTStatus(mgr manager.Manager) (restStatus, error) {
	gvk := authv1beta1.GroupVersion.WithKind(authv1beta1.ResourceSliceKind)
	// JSON only: ResourceSlices are custom resources, which have no
	// protobuf encoding.
	rc, err := apiutil.RESTClientForGVK(gvk, true, false, mgr.GetConfig(), serializer.NewCodecFactory(mgr.GetScheme()), mgr.GetHTTPClient())
	if err != nil {
		return restStatus{}, fmt.Errorf("building the REST client of status writes: %w", err)
	}
	return restStatus{rest: rc}, nil
}

func (w restStatus) patchStatus(ctx context.Context, rs *authv1beta1.ResourceSlice, p client.Patch, owner client.FieldOwner) error {
	data, err := p.Data(rs)
	if err != nil {
		return err
	}
	body, err := w.rest.Patch(p.Type()).
		Namespace(rs.Namespace).
		Resource(authv1beta1.ResourceSliceResource).
		Name(rs.Name).
		SubResource("status").
		Param("fieldManager", string(owner)).
		Body(data).
		Do(ctx).
		Raw()
	if err != nil {
		return err
	}
	rv, err := answerVersion(body)
	if err != nil {
		// Not the shape an API server sends: decode it all rather than
		// guess.
		if uerr := json.Unmarshal(body, rs); uerr != nil {
			return fmt.Errorf("reading the API server's answer to a status patch: %w", errors.Join(err, uerr))
		}
		return nil
	}
	rs.ResourceVersion = rv
	return nil
}

// answerVersion reads metadata.resourceVersion from an object's JSON,
// stopping there: the fields after metadata (spec and status, where a
// slice's CSR and certificates are) are not read at all, and those before
// it only scanned.
func answerVersion(body []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := openObject(dec); err != nil {
		return "", err
	}
	for dec.More() {
		key, err := objectKey(dec)
		if err != nil {
			return "", err
		}
		if key != "metadata" {
			if err := skipValue(dec); err != nil {
				return "", err
			}
			continue
		}
		if err := openObject(dec); err != nil {
			return "", fmt.Errorf("metadata: %w", err)
		}
		for dec.More() {
			k, err := objectKey(dec)
			if err != nil {
				return "", err
			}
			if k != "resourceVersion" {
				if err := skipValue(dec); err != nil {
					return "", err
				}
				continue
			}
			var rv string
			if err := dec.Decode(&rv); err != nil {
				return "", fmt.Errorf("metadata.resourceVersion: %w", err)
			}
			if rv == "" {
				return "", errors.New("empty metadata.resourceVersion")
			}
			return rv, nil
		}
		break
	}
	return "", errors.New("no metadata.resourceVersion")
}

func openObject(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("want an object, got %v", t)
	}
	return nil
}

func objectKey(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", err
	}
	k, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("want a key, got %v", t)
	}
	return k, nil
}

func skipValue(dec *json.Decoder) error {
	var skip json.RawMessage
	return dec.Decode(&skip)
}

package resourceslice

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kjson "sigs.k8s.io/json"

	"github.com/sliceclass/sliceclass/internal/ledger"
)

// apiPod is a ShadowPod's JSON as far as the charge reads it, for the API
// machinery's own decoder: the reference readPodJSON is held to.
type apiPod struct {
	Kind     string `json:"kind,omitempty"`
	Metadata struct {
		Name              string            `json:"name,omitempty"`
		Namespace         string            `json:"namespace,omitempty"`
		UID               types.UID         `json:"uid,omitempty"`
		ResourceVersion   string            `json:"resourceVersion,omitempty"`
		CreationTimestamp metav1.Time       `json:"creationTimestamp,omitempty"`
		Labels            map[string]string `json:"labels,omitempty"`
		Annotations       map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Spec struct {
		Pod struct {
			Containers     []apiContainer `json:"containers,omitempty"`
			InitContainers []apiContainer `json:"initContainers,omitempty"`
		} `json:"pod"`
	} `json:"spec"`
	Status struct {
		Phase corev1.PodPhase `json:"phase,omitempty"`
	} `json:"status"`
}

// apiContainer is a container, as far as the charge reads it.
type apiContainer struct {
	Resources struct {
		Requests corev1.ResourceList `json:"requests,omitempty"`
	} `json:"resources"`
}

// charge is the shadowPodCharge the reference decoding gives.
func (w *apiPod) charge() shadowPodCharge {
	spec := corev1.PodSpec{}
	for _, c := range w.Spec.Pod.Containers {
		spec.Containers = append(spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	for _, c := range w.Spec.Pod.InitContainers {
		spec.InitContainers = append(spec.InitContainers, corev1.Container{Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}})
	}
	var annotations map[string]string
	if v, ok := w.Metadata.Annotations[metav1.InitialEventsAnnotationKey]; ok {
		annotations = map[string]string{metav1.InitialEventsAnnotationKey: v}
	}
	return shadowPodCharge{
		ObjectMeta: metav1.ObjectMeta{Name: w.Metadata.Name, Namespace: w.Metadata.Namespace, UID: w.Metadata.UID,
			ResourceVersion: w.Metadata.ResourceVersion, CreationTimestamp: w.Metadata.CreationTimestamp, Annotations: annotations},
		User:   w.Metadata.Labels[labelCreatorUser],
		Phase:  w.Status.Phase,
		Charge: ledger.PodCharge(&spec),
	}
}

// agreeWithTheAPIDecoder checks that decode answers for data what the API
// machinery's decoder answers: both an error, or the same charge and kind.
// A document naming a field twice is held to nothing more than an error
// where the reference errs (see chargejson.go).
func agreeWithTheAPIDecoder(t *testing.T, data []byte) {
	t.Helper()
	var p shadowPodCharge
	kind, err := p.decode(data)
	var w apiPod
	duplicates, wantErr := kjson.UnmarshalStrict(data, &w, kjson.DisallowDuplicateFields)
	if wantErr != nil {
		assert.Error(t, err, "the API decoder refuses %q: %v", data, wantErr)
		return
	}
	if len(duplicates) > 0 {
		return
	}
	require.NoError(t, err, "the API decoder takes %q", data)
	assert.Equal(t, w.Kind, kind, "%q", data)
	want := w.charge()
	assert.True(t, apiequality.Semantic.DeepEqual(want, p), "%q:\nwant %+v\n got %+v", data, want, p)
}

// readPodJSON decodes what the API machinery's decoder decodes, and errs
// where it errs: nulls, wrong types, escapes, case, trailing data.
func TestReadPodJSONAgreesWithTheAPIDecoder(t *testing.T) {
	docs := []string{
		string(aShadowPod(t)),
		`{}`, `null`, ` {} `, ``, `{`, `[]`, `"pod"`, `5`, `{}x`, `{} {}`, `{"a":1,}`, `{"a" 1}`, `{,}`,
		`{"kind":"ShadowPod","metadata":{"name":"p","namespace":"n","uid":"u","resourceVersion":"7","creationTimestamp":"2026-11-25T10:00:00Z"}}`,
		`{"kind":"Status","status":"Failure","code":410}`,
		`{"metadata":null,"spec":null,"status":null}`,
		`{"metadata":{"name":null,"labels":null,"annotations":null}}`,
		`{"metadata":{"labels":{"liqo.io/creator-user":null}}}`,
		`{"metadata":{"labels":{"liqo.io/creator-user":"u","other":null}}}`,
		`{"metadata":{"labels":{"liqo.io/creator-user":"u","other":5}}}`,
		`{"metadata":{"labels":{"liqo.io\/creator-user":"\u0075ser"}}}`,
		`{"meta\u0064ata":{"name":"escaped key"}}`,
		`{"Metadata":{"name":"another case"},"KIND":"x"}`,
		`{"metadata":{"name":"caf\u00e9 ` + "\xff" + ` é"}}`,
		`{"metadata":{"name":"a` + "\x01" + `"}}`,
		`{"metadata":{"name":"bad \x escape"}}`,
		`{"metadata":{"annotations":{"k8s.io/initial-events-end":"true"}}}`,
		`{"metadata":{"annotations":{"k8s.io/initial-events-end":null}}}`,
		`{"metadata":{"annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"pod":{}}}`,
		`{"metadata":{"creationTimestamp":null}}`,
		`{"metadata":{"creationTimestamp":"yesterday"}}`,
		`{"metadata":{"creationTimestamp":{}}}`,
		`{"metadata":{"name":5}}`, `{"metadata":[]}`, `{"metadata":"x"}`, `{"kind":true}`,
		`{"spec":{"pod":{"containers":null,"initContainers":[]}}}`,
		`{"spec":{"pod":{"containers":[null,{},{"resources":null},{"resources":{"requests":null}}]}}}`,
		`{"spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":"1","memory":"1Gi"}}},{"resources":{"requests":{"cpu":0.5}}}],` +
			`"initContainers":[{"resources":{"requests":{"cpu":"2","memory":null}}}]}}}`,
		`{"spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":"lots"}}}]}}}`,
		`{"spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":{}}}}]}}}`,
		`{"spec":{"pod":{"containers":[{"resources":{"requests":[]}}]}}}`,
		`{"spec":{"pod":{"containers":{}}}}`, `{"spec":{"pod":{"containers":[5]}}}`, `{"spec":{"pod":5}}`,
		`{"status":{"phase":"Succeeded"}}`, `{"status":{"phase":1}}`,
		`{"x":[1,-0.5e+3,true,false,null,"s",{"y":[[]]}]}`, `{"x":01}`, `{"x":1.}`, `{"x":-}`, `{"x":tru}`, `{"x":nul}`,
	}
	for _, doc := range docs {
		agreeWithTheAPIDecoder(t, []byte(doc))
	}

	// And what it decodes, spelled out for the cases that matter.
	var p shadowPodCharge
	_, err := p.decode([]byte(`{"meta\u0064ata":{"name":"p","labels":{"liqo.io\/creator-user":"user-a"}},"Spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":"9"}}}]}},` +
		`"spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":"1"}}},{"resources":{"requests":{"cpu":"500m"}}}],"initContainers":[{"resources":{"requests":{"cpu":"2"}}}]}}}`))
	require.NoError(t, err)
	assert.Equal(t, "p", p.Name, "an escaped key is its text")
	assert.Equal(t, "user-a", p.User)
	assert.Equal(t, "2", p.Charge.Cpu().String(), "keys match exactly (Spec is not spec); the larger of 1.5 summed and the init container's 2")
	_, err = p.decode([]byte(`{"metadata":{"name":"p"}} {}`))
	assert.Error(t, err, "a second value after the first")
}

// FuzzReadPodJSON: readPodJSON agrees with the API machinery's decoder on
// any input.
func FuzzReadPodJSON(f *testing.F) {
	f.Add(aShadowPod(f))
	f.Add([]byte(`{"metadata":{"labels":{"liqo.io/creator-user":"u"},"annotations":{"k8s.io/initial-events-end":"true"}},` +
		`"spec":{"pod":{"containers":[{"resources":{"requests":{"cpu":"1"}}}],"initContainers":[null]}},"status":{"phase":"Running"}}`))
	f.Add([]byte(`{"meta\u0064ata":{"name":"\"\\\/\b\f\n\r\t\u00e9"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if strings.Count(string(data), "[")+strings.Count(string(data), "{") > 1000 {
			return // deep nesting: both decoders recurse, the fuzzer need not
		}
		agreeWithTheAPIDecoder(t, data)
	})
}

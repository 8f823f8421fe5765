package slicetest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/sliceclass/sliceclass/internal/budgethook"
)

// harnessManager is the manager the harness's classes are set up in, the
// way a class is set up in the manager a user built (the one internal
// builder, reached through internal/classhook): its client is the fake
// client (reads are never behind a test's writes, so that a test may call
// Harness.Reevaluate or SweepInventory right after one), its API reader reads
// the fake API server, its cache delivers watch events when the harness
// syncs it. The SDK's other caches (the set's status.class view and
// ShadowPod watch) are built against a REST config no server answers and are never
// started: the harness's discovery says the ResourceSlice schema has no
// status.class (Liqo v1.2.0's CRD) and its REST mapper knows no ShadowPod,
// so no class asks them anything.
//
// Methods the SDK does not call are those of the nil embedded Manager,
// and panic. GetEventRecorder is one (its result type changed in
// controller-runtime v0.25): every class the harness sets up is given the
// harness's recorder, a SliceBudget's follower is given it too
// (WithSliceBudget), and the budgets' evictor, which asks the manager for
// one, never starts here (no ShadowPods are served).
type harnessManager struct {
	manager.Manager

	scheme *runtime.Scheme
	mapper meta.RESTMapper
	client client.Client
	api    client.Reader
	cache  *watchCache
	logger logr.Logger
	events events.EventRecorder
	http   *http.Client

	mu        sync.Mutex
	runnables []manager.Runnable
	elected   chan struct{}
}

func (m *harnessManager) GetClient() client.Client             { return m.client }
func (m *harnessManager) GetCache() cache.Cache                { return m.cache }
func (m *harnessManager) GetFieldIndexer() client.FieldIndexer { return m.cache }
func (m *harnessManager) GetAPIReader() client.Reader          { return m.api }
func (m *harnessManager) GetScheme() *runtime.Scheme           { return m.scheme }
func (m *harnessManager) GetRESTMapper() meta.RESTMapper       { return m.mapper }
func (m *harnessManager) GetLogger() logr.Logger               { return m.logger }
func (m *harnessManager) GetHTTPClient() *http.Client          { return m.http }
func (m *harnessManager) Elected() <-chan struct{}             { return m.elected }

func (m *harnessManager) GetEventRecorderFor(string) record.EventRecorder {
	return &record.FakeRecorder{}
}

// GetConfig is a config no server answers: only the caches the harness
// never starts are built from it.
func (m *harnessManager) GetConfig() *rest.Config {
	return &rest.Config{Host: "https://slicetest.invalid"}
}

func (m *harnessManager) GetControllerOptions() config.Controller {
	return config.Controller{SkipNameValidation: ptr.To(true)}
}

func (m *harnessManager) Add(r manager.Runnable) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runnables = append(m.runnables, r)
	return nil
}

// added is how many runnables were added so far; addedSince, those added
// after the first n.
func (m *harnessManager) added() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.runnables)
}

func (m *harnessManager) addedSince(n int) []manager.Runnable {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]manager.Runnable(nil), m.runnables[n:]...)
}

// start runs every runnable the classes and budgets added, until ctx ends,
// but the caches no server answers and the SliceBudgets' status writers
// (Harness.SliceBudget drives them); wait waits for them to return.
func (m *harnessManager) start(ctx context.Context) (wait func()) {
	m.mu.Lock()
	rs := append([]manager.Runnable(nil), m.runnables...)
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		if c, ok := r.(cache.Cache); ok && c != cache.Cache(m.cache) {
			continue
		}
		if _, ok := r.(budgethook.StatusWriter); ok {
			continue // written when the test reads it (Harness.SliceBudget)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Start(ctx); err != nil && ctx.Err() == nil {
				m.logger.Error(err, "slicetest: a runnable of the harness's manager failed")
			}
		}()
	}
	return wg.Wait
}

// discovery answers the OpenAPI v3 discovery the SDK reads to learn
// whether the ResourceSlice schema has status.class: the schema of Liqo
// v1.2.0's CRD, which has none.
type discovery struct{}

const openAPIGroupPath = "/openapi/v3/apis/authentication.liqo.io/v1beta1"

func (discovery) RoundTrip(req *http.Request) (*http.Response, error) {
	body, code := "", http.StatusNotFound
	switch req.URL.Path {
	case "/openapi/v3":
		body, code = fmt.Sprintf(`{"paths":{"apis/%s":{"serverRelativeURL":"%s?hash=slicetest"}}}`,
			authv1beta1.GroupVersion.String(), openAPIGroupPath), http.StatusOK
	case openAPIGroupPath:
		body, code = fmt.Sprintf(`{"openapi":"3.0.0","components":{"schemas":{"slice":{"type":"object",`+
			`"x-kubernetes-group-version-kind":[{"group":%q,"version":%q,"kind":%q}],`+
			`"properties":{"spec":{"type":"object","properties":{"class":{"type":"string"}}},`+
			`"status":{"type":"object","properties":{"resources":{"type":"object"}}}}}}}}`,
			authv1beta1.GroupVersion.Group, authv1beta1.GroupVersion.Version, authv1beta1.ResourceSliceKind), http.StatusOK
	}
	return &http.Response{
		StatusCode: code,
		Header:     http.Header{"Content-Type": []string{"application/json"}},
		Body:       io.NopCloser(strings.NewReader(body)),
		Request:    req,
	}, nil
}

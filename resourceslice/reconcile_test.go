package resourceslice_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
)

const gold = "gold"

// countingHandler counts calls and delegates to f.
type countingHandler struct {
	calls atomic.Int32
	f     handler.Func
}

func (c *countingHandler) Handle(ctx context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	c.calls.Add(1)
	return c.f(ctx, rs)
}

func acceptAll(reason string) *countingHandler {
	return &countingHandler{f: func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, reason, "granted as requested")
		return ctrl.Result{}, nil
	}}
}

func denyAll(reason string) *countingHandler {
	return &countingHandler{f: func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Deny(rs, reason, "no capacity")
		return ctrl.Result{}, nil
	}}
}

func goldSlice(name string, opts ...slicetest.SliceOption) *authv1beta1.ResourceSlice {
	return slicetest.NewSlice(name, append([]slicetest.SliceOption{slicetest.WithClass(gold), slicetest.WithRequest(corev1.ResourceCPU, "2")}, opts...)...)
}

func reasons(evs []slicetest.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type+"/"+e.Reason)
	}
	return out
}

func TestReconcileDecisions(t *testing.T) {
	deleting := goldSlice("deleting")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{"liqo.io/test"}

	cases := map[string]struct {
		reason       string
		slice        *authv1beta1.ResourceSlice
		objs         []client.Object
		h            *countingHandler
		opts         []resourceslice.DecisionOption
		wantCalls    int32
		wantDecision authv1beta1.ResourceSliceConditionStatus
		wantReason   string
		wantWrites   int
		wantEvents   []string
	}{
		"Accept": {
			reason: "An accepted slice gets one status patch and a Normal event with the handler's reason.",
			slice:  goldSlice("a"), h: acceptAll("Granted"),
			wantCalls: 1, wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: "Granted", wantWrites: 1,
			wantEvents: []string{"Normal/Granted"},
		},
		"Deny": {
			reason: "A denied slice gets one status patch and a Warning event.",
			slice:  goldSlice("a"), h: denyAll("NoCapacity"),
			wantCalls: 1, wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: "NoCapacity", wantWrites: 1,
			wantEvents: []string{"Warning/NoCapacity"},
		},
		"OtherClass": {
			reason: "A slice of another class is never handed to the handler nor written.",
			slice:  slicetest.NewSlice("a", slicetest.WithClass("silver")), h: acceptAll("Granted"),
		},
		"DefaultClass": {
			reason: "Liqo's default class is Liqo's own.",
			slice:  slicetest.NewSlice("a", slicetest.WithClass("default")), h: acceptAll("Granted"),
		},
		"Deleting": {
			reason: "A slice being deleted is not handed to the handler.",
			slice:  deleting, h: acceptAll("Granted"),
		},
		"Unauthenticated": {
			reason: "The authentication gate holds a slice Liqo has not authenticated.",
			slice:  goldSlice("a", slicetest.Unauthenticated()), h: acceptAll("Granted"),
		},
		"UnauthenticatedGateOff": {
			reason: "With the gate off the handler decides at once.",
			slice:  goldSlice("a", slicetest.Unauthenticated()), h: acceptAll("Granted"),
			opts:      []resourceslice.DecisionOption{resourceslice.WithoutAuthenticationGate()},
			wantCalls: 1, wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: "Granted", wantWrites: 1,
			wantEvents: []string{"Normal/Granted"},
		},
		"TenantDrained": {
			reason: "A drained tenant's slice is denied by the SDK without asking the handler.",
			slice:  goldSlice("a"), objs: []client.Object{slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionDrained)},
			h:            acceptAll("Granted"),
			wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: "TenantDrained", wantWrites: 1,
			wantEvents: []string{"Warning/" + "TenantDrained"},
		},
		"TenantDrainedRuleOff": {
			reason: "With the tenant rule off the handler decides.",
			slice:  goldSlice("a"), objs: []client.Object{slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionDrained)},
			h: acceptAll("Granted"), opts: []resourceslice.DecisionOption{resourceslice.WithoutTenantRule()},
			wantCalls: 1, wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: "Granted", wantWrites: 1,
			wantEvents: []string{"Normal/Granted"},
		},
		"TenantCordonedUndecided": {
			reason: "A cordoned tenant gets no new resources.",
			slice:  goldSlice("a"), objs: []client.Object{slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionCordoned)},
			h:            acceptAll("Granted"),
			wantDecision: authv1beta1.ResourceSliceConditionDenied, wantReason: "TenantCordoned", wantWrites: 1,
			wantEvents: []string{"Warning/" + "TenantCordoned"},
		},
		"TenantCordonedDecided": {
			reason: "A cordoned tenant keeps what it has: no call, no write.",
			slice:  goldSlice("a", slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Granted")),
			objs:   []client.Object{slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionCordoned)},
			h:      denyAll("NoCapacity"), wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: "Granted",
		},
		"TenantActive": {
			reason: "An active tenant's slice goes to the handler.",
			slice:  goldSlice("a"), objs: []client.Object{slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionActive)},
			h: acceptAll("Granted"), wantCalls: 1, wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: "Granted", wantWrites: 1,
			wantEvents: []string{"Normal/Granted"},
		},
		"OtherConsumersTenantDrained": {
			reason: "Only the slice's own consumer's Tenant counts.",
			slice:  goldSlice("a"), objs: []client.Object{slicetest.NewTenant("someone-else", authv1beta1.TenantConditionDrained)},
			h: acceptAll("Granted"), wantCalls: 1, wantDecision: authv1beta1.ResourceSliceConditionAccepted, wantReason: "Granted", wantWrites: 1,
			wantEvents: []string{"Normal/Granted"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			hs := slicetest.New(t, gold, tc.h, slicetest.WithObjects(append([]client.Object{tc.slice}, tc.objs...)...),
				slicetest.WithReconcilerOptions(tc.opts...))
			res := hs.Reconcile(tc.slice)
			if res.Err != nil {
				t.Fatalf("%s\nReconcile: unexpected error %v", tc.reason, res.Err)
			}
			if got := tc.h.calls.Load(); got != tc.wantCalls {
				t.Errorf("%s\nhandler calls: want %d, got %d", tc.reason, tc.wantCalls, got)
			}
			if res.Decision != tc.wantDecision || res.Reason != tc.wantReason {
				t.Errorf("%s\ndecision: want %q/%q, got %q/%q", tc.reason, tc.wantDecision, tc.wantReason, res.Decision, res.Reason)
			}
			if len(res.Writes) != tc.wantWrites {
				t.Errorf("%s\nwrites: want %d, got %d: %+v", tc.reason, tc.wantWrites, len(res.Writes), res.Writes)
			}
			if diff := cmp.Diff(tc.wantEvents, reasons(res.Events)); diff != "" {
				t.Errorf("%s\nevents (-want +got):\n%s", tc.reason, diff)
			}
			for _, w := range res.Writes {
				if w.Verb != "patch" || w.Subresource != "status" {
					t.Errorf("%s\nwrite %+v: want only status patches", tc.reason, w)
				}
			}
			hs.AssertIdempotent(tc.slice)
		})
	}
}

func TestPatchCarriesOnlyOwnedFieldsAndResourceVersion(t *testing.T) {
	s := goldSlice("a")
	res := slicetest.New(t, gold, acceptAll("Granted"), slicetest.WithObjects(s)).Reconcile(s)
	if len(res.Writes) != 1 {
		t.Fatalf("want 1 write, got %d", len(res.Writes))
	}
	p := res.Writes[0].Patch
	if !strings.Contains(p, `"resourceVersion"`) {
		t.Errorf("patch %s does not carry the resourceVersion (optimistic lock)", p)
	}
	for _, foreign := range []string{"authParams", `"spec"`, "csr", "labels"} {
		if strings.Contains(p, foreign) {
			t.Errorf("patch %s carries %s, which the class controller does not own", p, foreign)
		}
	}
	// Liqo's fields are intact after the write.
	if diff := cmp.Diff(s.Status.AuthParams, res.Slice.Status.AuthParams); diff != "" {
		t.Errorf("authParams changed (-want +got):\n%s", diff)
	}
	if !conditions.IsAuthenticated(res.Slice) {
		t.Errorf("Authentication condition lost: %+v", res.Slice.Status.Conditions)
	}
}

func TestHandlerFailures(t *testing.T) {
	boom := errors.New("capacity service down")
	cases := map[string]struct {
		reason       string
		f            handler.Func
		wantTerminal bool
		wantEvent    string
	}{
		"Error": {
			reason: "A handler error is retried with backoff and reported in a Warning event.",
			f: func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				return ctrl.Result{}, boom
			},
			wantEvent: "HandlerFailed",
		},
		"Terminal": {
			reason: "A terminal handler error stays terminal.",
			f: func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				return ctrl.Result{}, reconcile.TerminalError(boom)
			},
			wantTerminal: true, wantEvent: "HandlerFailed",
		},
		"Panic": {
			reason: "A panic becomes an error, not a crash.",
			f: func(context.Context, *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				panic("policy bug")
			},
			wantEvent: "HandlerPanicked",
		},
		"NoDecision": {
			reason: "Returning without a decision breaks the contract: terminal, no retry storm.",
			f: func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				rs.Status.Resources = rs.Spec.Resources
				return ctrl.Result{}, nil
			},
			wantTerminal: true, wantEvent: "NoDecision",
		},
		"BadStatus": {
			reason: "A Resources condition that is neither Accepted nor Denied is no decision.",
			f: func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeResources, "Maybe", "Thinking", "")
				return ctrl.Result{}, nil
			},
			wantTerminal: true, wantEvent: "NoDecision",
		},
		"NegativeQuantity": {
			reason: "A negative offer is refused like a missing decision.",
			f: func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				rs.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
				conditions.Accept(rs, "Granted", "")
				return ctrl.Result{}, nil
			},
			wantTerminal: true, wantEvent: "InvalidResources",
		},
		"QuantityBeyondInt64": {
			reason: "An offer of 1000E would be written as 1: refused rather than a different offer sent.",
			f: func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
				rs.Status.Resources = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000E")}
				conditions.Accept(rs, "Granted", "")
				return ctrl.Result{}, nil
			},
			wantTerminal: true, wantEvent: "InvalidResources",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s := goldSlice("a")
			hs := slicetest.New(t, gold, tc.f, slicetest.WithObjects(s),
				slicetest.WithReconcilerOptions(resourceslice.WithMetricsRegisterer(reg)))
			res := hs.Reconcile(s)
			if res.Err == nil {
				t.Fatalf("%s\nwant an error, got none", tc.reason)
			}
			if errors.Is(res.Err, reconcile.TerminalError(nil)) != tc.wantTerminal {
				t.Errorf("%s\nterminal: want %v, got %v (%v)", tc.reason, tc.wantTerminal, errors.Is(res.Err, reconcile.TerminalError(nil)), res.Err)
			}
			if !strings.Contains(res.Err.Error(), gold) || !strings.Contains(res.Err.Error(), "liqo-tenant-consumer/a") {
				t.Errorf("%s\nerror %q must name the class and the slice", tc.reason, res.Err)
			}
			if diff := cmp.Diff([]string{"Warning/" + tc.wantEvent}, reasons(res.Events)); diff != "" {
				t.Errorf("%s\nevents (-want +got):\n%s", tc.reason, diff)
			}
			if len(res.Writes) != 0 || res.Decision != "" {
				t.Errorf("%s\nnothing must be saved, got writes %+v decision %q", tc.reason, res.Writes, res.Decision)
			}
			n, err := testutil.GatherAndCount(reg, "sliceclass_handler_errors_total")
			if err != nil || n != 1 {
				t.Errorf("%s\nhandler error series: want 1, got %d (%v)", tc.reason, n, err)
			}
		})
	}
}

func TestForeignChangesAreDiscarded(t *testing.T) {
	s := goldSlice("a")
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Spec.Class = "platinum"
		rs.Labels["sneaky"] = "yes"
		rs.Status.AuthParams.SignedCRT = []byte("forged")
		sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionDenied, "Nope", "")
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{}, nil
	})
	res := slicetest.New(t, gold, h, slicetest.WithObjects(s)).Reconcile(s)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if res.Decision != authv1beta1.ResourceSliceConditionAccepted {
		t.Errorf("the decision must still be saved, got %q", res.Decision)
	}
	got := res.Slice
	if got.Spec.Class != gold || got.Labels["sneaky"] != "" || string(got.Status.AuthParams.SignedCRT) != "crt" || !conditions.IsAuthenticated(got) {
		t.Errorf("foreign changes were saved: class %q labels %v crt %q conditions %+v",
			got.Spec.Class, got.Labels, got.Status.AuthParams.SignedCRT, got.Status.Conditions)
	}
	if diff := cmp.Diff([]string{"Warning/" + "ChangesDiscarded", "Normal/Granted"}, reasons(res.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestConflictRequeuesQuietly(t *testing.T) {
	s := goldSlice("a")
	hs := slicetest.New(t, gold, acceptAll("Granted"), slicetest.WithObjects(s),
		slicetest.WithStatusWriteErrors(slicetest.Conflict(), slicetest.Conflict()))
	first := hs.Reconcile(s)
	if first.Err != nil || first.Result.RequeueAfter <= 0 || len(first.Events) != 0 || first.Decision != "" {
		t.Fatalf("a conflict must requeue quietly: err %v result %+v events %v decision %q", first.Err, first.Result, first.Events, first.Decision)
	}
	second := hs.Reconcile(s)
	if second.Result.RequeueAfter <= first.Result.RequeueAfter {
		t.Errorf("repeated conflicts must back off: %s then %s", first.Result.RequeueAfter, second.Result.RequeueAfter)
	}
	third := hs.Reconcile(s)
	if third.Err != nil || third.Decision != authv1beta1.ResourceSliceConditionAccepted || third.Result.RequeueAfter != 0 {
		t.Errorf("after the conflicts the decision must land: %+v", third)
	}
}

func TestWriteErrors(t *testing.T) {
	gr := schema.GroupResource{Group: authv1beta1.GroupVersion.Group, Resource: "resourceslices"}
	cases := map[string]struct {
		err          error
		wantErr      bool
		wantTerminal bool
		wantEvents   []string
	}{
		"ServerError": {err: apierrors.NewInternalError(errors.New("etcd down")), wantErr: true},
		"Invalid": {err: apierrors.NewInvalid(schema.GroupKind{Group: gr.Group, Kind: "ResourceSlice"}, "a", nil),
			wantErr: true, wantTerminal: true, wantEvents: []string{"Warning/" + "StatusRejected"}},
		"Gone": {err: apierrors.NewNotFound(gr, "a")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := goldSlice("a")
			hs := slicetest.New(t, gold, acceptAll("Granted"), slicetest.WithObjects(s), slicetest.WithStatusWriteErrors(tc.err))
			res := hs.Reconcile(s)
			if (res.Err != nil) != tc.wantErr || errors.Is(res.Err, reconcile.TerminalError(nil)) != tc.wantTerminal {
				t.Errorf("err %v terminal %v; want err %v terminal %v", res.Err, errors.Is(res.Err, reconcile.TerminalError(nil)), tc.wantErr, tc.wantTerminal)
			}
			if diff := cmp.Diff(tc.wantEvents, reasons(res.Events)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransitionTimeKeptWhenStatusUnchanged(t *testing.T) {
	past := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
	s := goldSlice("a", slicetest.Decided(authv1beta1.ResourceSliceConditionAccepted, "Old"))
	conditions.Get(s, authv1beta1.ResourceSliceConditionTypeResources).LastTransitionTime = past
	res := slicetest.New(t, gold, acceptAll("New"), slicetest.WithObjects(s)).Reconcile(s)
	if res.Reason != "New" || len(res.Writes) != 1 {
		t.Fatalf("want one write with the new reason, got %q and %d writes", res.Reason, len(res.Writes))
	}
	if got := conditions.Get(res.Slice, authv1beta1.ResourceSliceConditionTypeResources).LastTransitionTime; !got.Equal(&past) {
		t.Errorf("LastTransitionTime moved from %s to %s though the status stayed Accepted", past, got)
	}
	if diff := cmp.Diff([]string{"Normal/New"}, reasons(res.Events)); diff != "" {
		t.Errorf("a new reason is a transition: want one event (-want +got):\n%s", diff)
	}
}

func TestRequeueAfter(t *testing.T) {
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		conditions.Accept(rs, "Granted", "")
		return ctrl.Result{RequeueAfter: time.Hour}, nil
	})
	s := goldSlice("a")
	if got := slicetest.New(t, gold, h, slicetest.WithObjects(s)).Reconcile(s).Result.RequeueAfter; got != time.Hour {
		t.Errorf("handler's RequeueAfter: want 1h, got %s", got)
	}
	hs := slicetest.New(t, gold, h, slicetest.WithObjects(s), slicetest.WithReconcilerOptions(resourceslice.WithResyncPeriod(time.Minute)))
	if got := hs.Reconcile(s).Result.RequeueAfter; got != time.Minute {
		t.Errorf("resync caps RequeueAfter: want 1m, got %s", got)
	}
}

func TestTenantBackToActiveRedecides(t *testing.T) {
	s := goldSlice("a")
	tenant := slicetest.NewTenant(slicetest.DefaultConsumer, authv1beta1.TenantConditionDrained)
	h := acceptAll("Granted")
	hs := slicetest.New(t, gold, h, slicetest.WithObjects(s, tenant))
	if res := hs.Reconcile(s); res.Decision != authv1beta1.ResourceSliceConditionDenied {
		t.Fatalf("drained: want Denied, got %q", res.Decision)
	}
	tenant.Spec.TenantCondition = authv1beta1.TenantConditionActive
	if err := hs.Client.Update(context.Background(), tenant); err != nil {
		t.Fatal(err)
	}
	res := hs.Reconcile(s)
	if res.Decision != authv1beta1.ResourceSliceConditionAccepted || h.calls.Load() != 1 {
		t.Errorf("active again: want Accepted by the handler, got %q after %d calls", res.Decision, h.calls.Load())
	}
}

func TestDecisionMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, b := goldSlice("a"), goldSlice("b", slicetest.WithRequest(corev1.ResourceCPU, "100"))
	h := handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		if rs.Spec.Resources.Cpu().Cmp(resource.MustParse("10")) > 0 {
			conditions.Deny(rs, "TooBig", "")
		} else {
			conditions.Accept(rs, "Granted", "")
		}
		return ctrl.Result{}, nil
	})
	hs := slicetest.New(t, gold, h, slicetest.WithObjects(a, b), slicetest.WithReconcilerOptions(resourceslice.WithMetricsRegisterer(reg)))
	hs.Reconcile(a)
	hs.Reconcile(b)
	hs.Reconcile(a) // no transition: not counted again
	want := `
# HELP sliceclass_decisions_total Decision transitions written to ResourceSlices, by class and outcome (accepted, denied; dryrun-accepted, dryrun-denied with WithDryRun).
# TYPE sliceclass_decisions_total counter
sliceclass_decisions_total{class="gold",outcome="accepted"} 1
sliceclass_decisions_total{class="gold",outcome="denied"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "sliceclass_decisions_total"); err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(reg, "sliceclass_handler_duration_seconds"); n != 1 {
		t.Errorf("handler duration series: want 1, got %d", n)
	}
}

// One handler call per decision (issue 20): a write that conflicts, fails
// or whose answer is lost sends again the decision the handler made when
// nothing it sees changed; a WithWatch pass or a spec change asks it again.
func TestOneHandlerCallPerDecision(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
	}{
		"Conflict":   {reason: "a conflict is retried with the same decision", err: slicetest.Conflict()},
		"Failed":     {reason: "a failed write is retried with the same decision", err: apierrors.NewServiceUnavailable("busy")},
		"AnswerLost": {reason: "an applied write whose answer was lost needs no second call", err: slicetest.AnswerLost(apierrors.NewServiceUnavailable("busy"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := acceptAll("Granted")
			s := goldSlice("a")
			hs := slicetest.New(t, gold, h, slicetest.WithObjects(s), slicetest.WithStatusWriteErrors(tc.err))
			first := hs.Reconcile(s)
			require.True(t, first.Err != nil || first.Result.RequeueAfter > 0, "the first write does not go through")
			res := hs.Reconcile(s)
			require.NoError(t, res.Err)
			assert.Equal(t, authv1beta1.ResourceSliceConditionAccepted, res.Decision)
			assert.Equal(t, int32(1), h.calls.Load(), tc.reason)
		})
	}

	t.Run("PassAsksAgain", func(t *testing.T) {
		h := acceptAll("Granted")
		s := goldSlice("a")
		hs := slicetest.New(t, gold, h, slicetest.WithObjects(s), slicetest.WithStatusWriteErrors(slicetest.Conflict()))
		hs.Reconcile(s)
		res := hs.Reevaluate()
		require.Len(t, res, 1, "the pass reconciles the class's one slice")
		require.NoError(t, res[0].Err)
		assert.Equal(t, int32(2), h.calls.Load(), "a WithWatch pass calls the handler again")
	})
	t.Run("SpecChangeAsksAgain", func(t *testing.T) {
		h := acceptAll("Granted")
		s := goldSlice("a")
		hs := slicetest.New(t, gold, h, slicetest.WithObjects(s), slicetest.WithStatusWriteErrors(slicetest.Conflict()))
		hs.Reconcile(s)
		var cur authv1beta1.ResourceSlice
		require.NoError(t, hs.Client.Get(context.Background(), client.ObjectKeyFromObject(s), &cur))
		cur.Spec.Resources[corev1.ResourceCPU] = resource.MustParse("3")
		cur.Generation++
		require.NoError(t, hs.Client.Update(context.Background(), &cur))
		res := hs.Reconcile(&cur)
		require.NoError(t, res.Err)
		assert.Equal(t, int32(2), h.calls.Load(), "a spec change calls the handler again")
		assert.Equal(t, "3", res.Resources.Cpu().String(), "and its new answer is written")
	})
}

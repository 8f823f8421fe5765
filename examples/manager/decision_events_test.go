package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/examples/cappedresources"
	"github.com/sliceclass/sliceclass/resourceslice"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

func TestParseFlagsDecisionEvents(t *testing.T) {
	for _, tc := range []struct {
		reason string
		args   []string
		want   resourceslice.DecisionEvents
	}{
		{reason: "an event on every decision by default, as the SDK", want: resourceslice.DecisionEventsAll},
		{reason: "all", args: []string{"--decision-events", "all"}, want: resourceslice.DecisionEventsAll},
		{reason: "denials only", args: []string{"--decision-events=denied"}, want: resourceslice.DecisionEventsDenied},
		{reason: "no decision event", args: []string{"--decision-events", "none"}, want: resourceslice.DecisionEventsNone},
	} {
		o, err := parseFlags(append([]string{"--class-name", "gold", "--cap", "cpu=4"}, tc.args...), io.Discard)
		require.NoError(t, err, tc.reason)
		assert.Equal(t, tc.want, o.DecisionEvents, tc.reason)
	}
}

// A bad --decision-events is a bad flag: one line naming the flag and the
// values it takes, exit status 2, as for every bad flag.
func TestBadDecisionEventsExitsTwoWithOneLine(t *testing.T) {
	for _, bad := range []string{"", "some", "All", "denied,none", "0"} {
		t.Run(bad, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := realMain(context.Background(), []string{"--class-name", "gold", "--cap", "cpu=4", "--decision-events", bad}, &stdout, &stderr)
			assert.Equal(t, 2, code)
			assert.Empty(t, stdout.String())
			out := stderr.String()
			assert.Equal(t, 1, strings.Count(out, "\n"), "one line, got %q", out)
			assert.Contains(t, out, "-decision-events")
			assert.Contains(t, out, "want all, denied or none")
		})
	}
}

// TestDecisionEventsReachEveryClass runs the manager with
// --decision-events=denied over two classes, named by --class-name and by
// --classes-file: every class records its denials and not its acceptances.
func TestDecisionEventsReachEveryClass(t *testing.T) {
	if testing.Short() {
		t.Skip("needs a control plane")
	}
	cp := controlplane.Start(t)
	for _, tc := range []struct {
		name    string
		classes []string
		// args names the classes.
		args func(t *testing.T) []string
	}{
		{"class-name", []string{"evgold", "evsilver"}, func(*testing.T) []string {
			return []string{"--class-name", "evgold,evsilver"}
		}},
		{"classes-file", []string{"evfilegold", "evfilesilver"}, func(t *testing.T) []string {
			path := filepath.Join(t.TempDir(), "classes.yaml")
			require.NoError(t, os.WriteFile(path, []byte("- name: evfilegold\n- name: evfilesilver\n"), 0o600))
			return []string{"--classes-file", path}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ns := "events-" + tc.name
			require.NoError(t, cp.CreateNamespace(ctx, ns))
			args := append(tc.args(t), "--cap", "cpu=4", "--decision-events", "denied", "--metrics-bind-address", "0", "--health-probe-bind-address", "0")
			o, err := parseFlags(args, io.Discard)
			require.NoError(t, err)
			serve(t, o, cp.Config)

			decide := func(name, class string, accepted bool, opts ...slicetest.SliceOption) {
				t.Helper()
				rs := slicetest.NewSlice(name, append(opts, slicetest.WithNamespace(ns), slicetest.WithClass(class))...)
				require.NoError(t, slicetest.CreateAsLiqo(ctx, cp.Client, rs))
				wctx, stop := context.WithTimeout(ctx, envkit.WaitTimeout)
				defer stop()
				got, err := slicetest.WaitForDecision(wctx, cp.Client, types.NamespacedName{Namespace: ns, Name: name})
				require.NoError(t, err, "waiting for %s to be decided", name)
				require.Equal(t, accepted, conditions.IsAccepted(got), "%s accepted, conditions %+v", name, got.Status.Conditions)
			}
			// The acceptances first: events they got would be written
			// before the denials' (one recorder, in order), so once the
			// denials' events are there, the acceptances' would be too.
			for _, class := range tc.classes {
				decide(class+"-granted", class, true, slicetest.WithRequest(corev1.ResourceCPU, "2"))
			}
			for _, class := range tc.classes {
				decide(class+"-denied", class, false) // requests nothing
			}

			var events corev1.EventList
			err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, envkit.WaitTimeout, true, func(ctx context.Context) (bool, error) {
				if err := cp.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
					return false, err
				}
				denials := 0
				for _, e := range events.Items {
					if e.Type == corev1.EventTypeWarning && e.Reason == cappedresources.ReasonNoResources {
						denials++
					}
				}
				return denials == len(tc.classes), nil
			})
			require.NoError(t, err, "waiting for one denial event per class")
			for _, e := range events.Items {
				assert.Equal(t, corev1.EventTypeWarning, e.Type, "with --decision-events=denied no class records its acceptances: %s %s on %s", e.Type, e.Reason, e.InvolvedObject.Name)
			}
		})
	}
}

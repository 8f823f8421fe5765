package charttest

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sliceclass/sliceclass/examples/manager/flags"
	sdkflags "github.com/sliceclass/sliceclass/flags"
	"github.com/sliceclass/sliceclass/resourceslice"
)

// managerContainer returns the rendered Deployment and its manager container.
func managerContainer(t *testing.T, objs []rendered) (*appsv1.Deployment, corev1.Container) {
	t.Helper()
	d := typed[appsv1.Deployment](t, only(t, objs, "Deployment", 1)[0])
	require.Len(t, d.Spec.Template.Spec.Containers, 1)
	return d, d.Spec.Template.Spec.Containers[0]
}

// parseArgs parses the container's args with the manager's own flag set:
// a flag the manager does not know, or a value of the wrong type, fails.
func parseArgs(t *testing.T, c corev1.Container) flags.Values {
	t.Helper()
	require.Empty(t, c.Command, "the image's entrypoint is the manager")
	v, err := flags.Parse(c.Args)
	require.NoError(t, err, "the manager refuses the rendered args %q", c.Args)
	return v
}

// port returns the container port named name.
func port(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("no container port %q in %v", name, c.Ports)
	return 0
}

// classesMount checks that the classes file the args name is in a
// directory mounted (never with subPath, whose file the kubelet never
// updates) from the rendered classes ConfigMap, and returns the ConfigMap's
// classes.yaml.
func classesMount(t *testing.T, objs []rendered, d *appsv1.Deployment, c corev1.Container, file string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if !strings.HasPrefix(file, m.MountPath+"/") {
			continue
		}
		assert.Empty(t, m.SubPath, "the classes ConfigMap must be mounted as a directory")
		assert.True(t, m.ReadOnly)
		for _, vol := range d.Spec.Template.Spec.Volumes {
			if vol.Name != m.Name {
				continue
			}
			require.NotNil(t, vol.ConfigMap, "volume %s is not a ConfigMap", vol.Name)
			key := strings.TrimPrefix(file, m.MountPath+"/")
			for _, r := range objsOf(objs, "ConfigMap") {
				if r.obj.GetName() == vol.ConfigMap.Name {
					cm := typed[corev1.ConfigMap](t, r.obj)
					data, ok := cm.Data[key]
					require.True(t, ok, "ConfigMap %s has no %s", cm.Name, key)
					return data
				}
			}
			t.Fatalf("the chart renders no ConfigMap %s", vol.ConfigMap.Name)
		}
		t.Fatalf("no volume %s", m.Name)
	}
	t.Fatalf("--classes-file=%s is in no mounted volume (%v)", file, c.VolumeMounts)
	return ""
}

// objsOf returns the rendered objects of kind.
func objsOf(objs []rendered, kind string) []rendered {
	var out []rendered
	for _, r := range objs {
		if r.obj.GetKind() == kind {
			out = append(out, r)
		}
	}
	return out
}

// TestDefaultArgs checks the defaults' Deployment with the manager's flag
// set: a classes file from the mounted ConfigMap, leader election and class
// Leases in the release namespace, the ports it binds declared, JSON logs,
// and a pod that runs as non-root with nothing it does not need.
func TestDefaultArgs(t *testing.T) {
	objs := render(t, "liqo", "")
	d, c := managerContainer(t, objs)
	v := parseArgs(t, c)

	assert.Equal(t, int32(2), *d.Spec.Replicas)
	assert.True(t, v.LeaderElect, "two replicas need leader election")
	assert.Equal(t, "liqo", v.LeaderElectionNamespace)
	assert.Equal(t, releaseName, v.LeaderElectionID, "one lease per release")
	assert.True(t, v.EnableWarmup, "warm standbys")
	assert.Contains(t, c.Args, "--enable-warmup=true", "said in the args, whatever a manager's own default")
	assert.Equal(t, "liqo", v.ClassLeaseNamespace)
	assert.Empty(t, v.ClassNames, "the classes come from the file")
	assert.Empty(t, v.Cap)
	assert.Empty(t, v.SharedBudget)
	assert.Equal(t, resourceslice.DecisionEventsAll, v.DecisionEvents, "an event on every decision, as the SDK")
	assert.False(t, v.Zap.Development, "JSON logs")
	assert.Equal(t, ":"+strconv.Itoa(int(port(t, c, "metrics"))), v.MetricsBindAddress)
	assert.Equal(t, ":"+strconv.Itoa(int(port(t, c, "probes"))), v.HealthProbeBindAddress)

	classes := classesMount(t, objs, d, c, v.ClassesFile)
	var file struct {
		Budgets []any            `json:"budgets"`
		Classes []map[string]any `json:"classes"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(classes), &file), "the documented object form")
	assert.Empty(t, file.Budgets)
	require.Len(t, file.Classes, 1, "one default class")
	assert.Equal(t, "gold", file.Classes[0]["name"])
	assert.NotEmpty(t, file.Classes[0]["caps"], "the default class has caps of its own")

	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	require.Contains(t, env, "GOMEMLIMIT")
	require.NotNil(t, env["GOMEMLIMIT"].ValueFrom)
	require.NotNil(t, env["GOMEMLIMIT"].ValueFrom.ResourceFieldRef)
	assert.Equal(t, "limits.memory", env["GOMEMLIMIT"].ValueFrom.ResourceFieldRef.Resource)
	require.NotNil(t, c.Resources.Limits.Memory(), "GOMEMLIMIT needs a memory limit")
	assert.False(t, c.Resources.Limits.Memory().IsZero())
	require.Contains(t, env, "POD_NAME", "the class Leases name their holder")

	pod := d.Spec.Template.Spec.SecurityContext
	require.NotNil(t, pod)
	assert.True(t, *pod.RunAsNonRoot)
	assert.Equal(t, int64(65532), *pod.RunAsUser, "the image's user")
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, pod.SeccompProfile.Type)
	sc := c.SecurityContext
	require.NotNil(t, sc)
	assert.False(t, *sc.AllowPrivilegeEscalation)
	assert.True(t, *sc.ReadOnlyRootFilesystem)
	assert.False(t, *sc.Privileged)
	assert.Equal(t, []corev1.Capability{"ALL"}, sc.Capabilities.Drop)
	assert.Empty(t, sc.Capabilities.Add)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
}

// TestEveryOptionArgs checks that every option reaches the manager as the
// flag it means.
func TestEveryOptionArgs(t *testing.T) {
	objs := render(t, "sc-all", everyOptionIn("sc-all"))
	d, c := managerContainer(t, objs)
	v := parseArgs(t, c)

	assert.Equal(t, int32(3), *d.Spec.Replicas)
	assert.Equal(t, "cpu=2,memory=4Gi", v.Cap)
	assert.Equal(t, "cpu=16,memory=64Gi", v.SharedBudget)
	assert.Equal(t, "sc-all-leases", v.ClassLeaseNamespace)
	assert.Equal(t, "sc-all", v.LeaderElectionNamespace)
	assert.True(t, v.LeaderElect)
	assert.False(t, v.EnableWarmup, "leaderElection.warmup: false gives cold standbys")
	assert.Equal(t, 8, v.MaxConcurrentReconciles)
	assert.Equal(t, resourceslice.DecisionEventsNone, v.DecisionEvents)
	assert.Equal(t, "sc-all-records", v.GrantRecordsNamespace)
	assert.Equal(t, ":9090", v.MetricsBindAddress)
	assert.Equal(t, int32(9090), port(t, c, "metrics"))
	assert.Equal(t, ":9091", v.HealthProbeBindAddress)
	assert.Equal(t, int32(9091), port(t, c, "probes"))
	assert.True(t, v.Zap.Development)
	require.NotNil(t, v.Zap.Level)
	require.NotNil(t, v.Zap.StacktraceLevel, "extraArgs reach the manager")
	assert.Equal(t, "custom-sa", d.Spec.Template.Spec.ServiceAccountName)
	assert.Equal(t, "system-cluster-critical", d.Spec.Template.Spec.PriorityClassName)

	classes := classesMount(t, objs, d, c, v.ClassesFile)
	var specs []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(classes), &specs))
	require.Len(t, specs, 2)
	assert.Equal(t, "silver", specs[1]["name"])
}

// TestClassesPassThrough checks that the classes reach the ConfigMap
// verbatim: fields the chart does not know (ones the manager learns later)
// are kept, and an empty list is an explicit [] (which the manager reads as
// "serve no class"), never an empty file (which it refuses).
func TestClassesPassThrough(t *testing.T) {
	objs := render(t, "liqo", `
classes:
  - name: gold
    caps: {cpu: "4"}
    nodePools: [{name: gpu, selector: {gpu: "true"}}]
    consumerLimits: [{consumer: acme, limits: {cpu: "8"}}]
`)
	d, c := managerContainer(t, objs)
	var specs []map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(classesMount(t, objs, d, c, parseArgs(t, c).ClassesFile)), &specs))
	require.Len(t, specs, 1)
	assert.Equal(t, []any{map[string]any{"name": "gpu", "selector": map[string]any{"gpu": "true"}}}, specs[0]["nodePools"])
	assert.Equal(t, []any{map[string]any{"consumer": "acme", "limits": map[string]any{"cpu": "8"}}}, specs[0]["consumerLimits"])

	objs = render(t, "liqo", "classes: []\n")
	d, c = managerContainer(t, objs)
	assert.Equal(t, "[]", strings.TrimSpace(classesMount(t, objs, d, c, parseArgs(t, c).ClassesFile)))
}

// TestRenderRefuses checks the values the chart refuses, with a message
// saying what to change, and one it accepts in their place.
func TestRenderRefuses(t *testing.T) {
	for _, tc := range []struct{ reason, values, want string }{
		{"two managers without leader election would decide the same slices",
			"leaderElection: {enabled: false}", "replicaCount > 1 needs leaderElection.enabled"},
		{"an existing ServiceAccount must be named",
			"serviceAccount: {create: false}", "serviceAccount.name is required"},
		{"the manager would refuse the flag and never start",
			"decisionEvents: some", `decisionEvents must be all, denied or none, got "some"`},
		{"a YAML boolean is not a mode",
			"decisionEvents: false", `decisionEvents must be all, denied or none, got "false"`},
		{"the manager's --enable-warmup takes a boolean",
			"leaderElection: {warmup: \"yes\"}", `leaderElection.warmup must be true or false, got "yes"`},
		// The budget rules' old shapes (issue 44), which the manager
		// refuses too: the error names the class or budget and the new shape.
		{"preemption is a policy now",
			"classes: [{name: gold, budget: {cpu: \"8\"}, preemption: true}]", `classes: "gold": preemption: true: preemption is {withinBudget: LowerPriority} now`},
		{"preemption: false is Never",
			"classes: {budgets: [{name: pool, total: {cpu: \"8\"}, preemption: false}], classes: []}", `classes: "pool": preemption: false: preemption is {withinBudget: Never} now`},
		{"evictionAfter is a count of seconds now",
			"classes: {budgets: [{name: pool, total: {cpu: \"8\"}, evictionAfter: 10m}], classes: [{name: gold, budgets: [pool]}]}", `classes: "pool": evictionAfter is evictionAfterSeconds now`},
		{"consumerLimits is a list now",
			"classes: [{name: gold, budget: {cpu: \"8\"}, consumerLimits: {globex: {cpu: \"0\"}}}]", `classes: "gold": consumerLimits is a list now`},
	} {
		_, err := renderValues(t, "liqo", tc.values)
		require.Error(t, err, tc.reason)
		assert.Contains(t, err.Error(), tc.want, tc.reason)
	}
	objs := render(t, "liqo", "serviceAccount: {create: false, name: existing}\nrbac: {create: false}")
	only(t, objs, "ServiceAccount", 0)
	only(t, objs, "ClusterRole", 0)
	only(t, objs, "Role", 0)
	d, _ := managerContainer(t, objs)
	assert.Equal(t, "existing", d.Spec.Template.Spec.ServiceAccountName)
}

// TestClassesForms renders both documented forms of classes, and the
// default, without helm's "skipped value ... Not a table" warning (which
// the map form gave when the default was a list), and checks that the
// classes file names the classes given, as a manager reads it
// (flags.ParseClassesConfig, which ClassConfigs reads the file with).
func TestClassesForms(t *testing.T) {
	for _, tc := range []struct {
		reason, values string
		want           []string
	}{
		{"the defaults", "", []string{"gold"}},
		{"the object form, as values.yaml documents it",
			"classes:\n  budgets: [{name: provider, total: {cpu: \"32\"}}]\n  classes: [{name: gold, budgets: [provider]}, {name: silver}]\n",
			[]string{"gold", "silver"}},
		{"the object form with classes alone keeps the default budgets: []",
			"classes: {classes: [{name: bronze}]}\n", []string{"bronze"}},
		{"the list form", "classes: [{name: silver, caps: {cpu: \"2\"}}]\n", []string{"silver"}},
		{"no class", "classes: []\n", []string{}},
	} {
		var logged bytes.Buffer
		log.SetOutput(&logged)
		objs := render(t, "liqo", tc.values)
		notes := renderFiles(t, "liqo", tc.values)["sliceclass-manager/templates/NOTES.txt"]
		log.SetOutput(os.Stderr)
		assert.Contains(t, notes, fmt.Sprintf("serves %d class(es)", len(tc.want)), "%s: NOTES.txt counts the classes", tc.reason)
		assert.NotContains(t, logged.String(), "skipped value", tc.reason)
		assert.NotContains(t, logged.String(), "Not a table", tc.reason)

		d, c := managerContainer(t, objs)
		cfg, err := sdkflags.ParseClassesConfig([]byte(classesMount(t, objs, d, c, parseArgs(t, c).ClassesFile)))
		require.NoError(t, err, tc.reason)
		names := []string{}
		for _, c := range cfg.Classes {
			names = append(names, c.Name)
		}
		assert.Equal(t, tc.want, names, tc.reason)
	}
}

// TestWarmupOnlyWithLeaderElection checks that one replica without
// leader election gets no --enable-warmup (it has no standby), and that
// with leader election it gets one even with a single replica (the new pod
// of a rolling update waits as a standby).
func TestWarmupOnlyWithLeaderElection(t *testing.T) {
	_, c := managerContainer(t, render(t, "liqo", "replicaCount: 1\nleaderElection: {enabled: false}"))
	v := parseArgs(t, c)
	assert.False(t, v.LeaderElect)
	for _, a := range c.Args {
		assert.NotContains(t, a, "--enable-warmup")
	}
	_, c = managerContainer(t, render(t, "liqo", "replicaCount: 1"))
	v = parseArgs(t, c)
	assert.True(t, v.LeaderElect)
	assert.True(t, v.EnableWarmup)
}

// TestCommandAndArgs checks that a manager of your own can replace the
// entrypoint and every rendered argument, extraArgs still appended; with
// neither set, the image's entrypoint runs with the rendered flags.
func TestCommandAndArgs(t *testing.T) {
	_, c := managerContainer(t, render(t, "liqo", `
image: {repository: registry.example/billing-manager, tag: v1.2.3}
command: [/billing-manager]
args: [--class-name=gold, --billing-namespace=billing]
extraArgs: [--zap-log-level=debug]
`))
	assert.Equal(t, "registry.example/billing-manager:v1.2.3", c.Image)
	assert.Equal(t, []string{"/billing-manager"}, c.Command)
	assert.Equal(t, []string{"--class-name=gold", "--billing-namespace=billing", "--zap-log-level=debug"}, c.Args)

	_, c = managerContainer(t, render(t, "liqo", "extraArgs: [--zap-log-level=debug]"))
	assert.Empty(t, c.Command, "the image's entrypoint")
	assert.Contains(t, c.Args, "--leader-elect", "the rendered flags")
	assert.Equal(t, "--zap-log-level=debug", c.Args[len(c.Args)-1], "extraArgs last")
}

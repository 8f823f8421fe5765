package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// fakeGo is a stand-in for the go tool: it records its arguments, chatters
// on stderr like `go get` does, answers the two JSON queries the installer
// makes, and "compiles" a binary that prints the requested version.
const fakeGo = `#!/bin/sh
echo "$*" >> "$FAKE_GO_CALLS"
echo "go: added example.com/chatter v1.0.0" >&2
case "$1 $2 $3" in
"mod init "*) touch go.mod ;;
"mod download -json") echo '{"GoMod": "/nowhere/k8s.io/kubernetes/go.mod"}' ;;
"mod edit -json") echo '{"Require": [{"Path": "k8s.io/api", "Version": "v0.0.0"}, {"Path": "k8s.io/klog/v2", "Version": "v2.130.1"}, {"Path": "k8s.io/apiserver", "Version": "v0.0.0"}]}' ;;
esac
if [ "$1" = build ]; then
  while [ $# -gt 0 ]; do
    if [ "$1" = -o ]; then out="$2"; fi
    shift
  done
  case "$out" in
  *etcd.tmp) printf '#!/bin/sh\necho "etcd Version: 3.6.8"\n' > "$out" ;;
  *kube-apiserver.tmp) printf '#!/bin/sh\necho "Kubernetes v1.35.3"\n' > "$out" ;;
  *kubectl.tmp) printf '#!/bin/sh\n[ "$*" = "version --client" ] && echo "Client Version: v1.35.3"\n' > "$out" ;;
  esac
  chmod +x "$out"
fi
`

// failingGo chatters and fails on its first call.
const failingGo = `#!/bin/sh
echo "go: added example.com/chatter v1.0.0" >&2
echo "go: boom" >&2
exit 1
`

// withGo puts an executable go script first on PATH and returns the file its
// calls are recorded in.
func withGo(t *testing.T, script string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake go tool is a shell script")
	}
	bin := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755))
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	calls := filepath.Join(t.TempDir(), "calls")
	t.Setenv("FAKE_GO_CALLS", calls)
	return calls
}

func TestRunBuildsBothIntoVersionedDir(t *testing.T) {
	calls := withGo(t, fakeGo)
	root := t.TempDir()
	var progress bytes.Buffer

	dir, err := run(context.Background(), []string{"-dir", root}, &progress)
	require.NoError(t, err, "progress:\n%s", progress.String())

	assert.Equal(t, filepath.Join(root, "k8s-v1.35.3-etcd-v3.6.8"), dir)
	recorded, err := os.ReadFile(calls)
	require.NoError(t, err)
	for _, want := range []string{
		"get -tool go.etcd.io/etcd/server/v3@v3.6.8",
		"mod edit -require=k8s.io/kubernetes@v1.35.3",
		"mod edit -replace=k8s.io/api=k8s.io/api@v0.35.3 -replace=k8s.io/apiserver=k8s.io/apiserver@v0.35.3\n",
		"-X k8s.io/component-base/version.gitVersion=v1.35.3 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35",
	} {
		assert.Contains(t, string(recorded), want, "go tool calls")
	}
	var phases []string
	for _, line := range strings.Split(strings.TrimSpace(progress.String()), "\n") {
		if i := strings.LastIndex(line, " ("); i > 0 && strings.HasSuffix(line, "s)") {
			line = line[:i]
		}
		phases = append(phases, line)
	}
	assert.Equal(t, []string{
		"envtest: building etcd v3.6.8 and kube-apiserver v1.35.3 from source into " + dir +
			" (cold: about 10 minutes on an idle 2-core machine; the go tool's output goes to build.log under " + filepath.Join(root, "src") + ")",
		"envtest: etcd v3.6.8: resolving modules...",
		"envtest: etcd v3.6.8: compiling...",
		"envtest: etcd v3.6.8: ready",
		"envtest: kube-apiserver v1.35.3: resolving modules...",
		"envtest: kube-apiserver v1.35.3: compiling...",
		"envtest: kube-apiserver v1.35.3: ready",
		"envtest: assets in " + dir,
	}, phases, "one progress line per phase, no go tool chatter")
	buildLog, err := os.ReadFile(filepath.Join(root, "src", "kube-apiserver-v1.35.3", "build.log"))
	require.NoError(t, err)
	assert.Contains(t, string(buildLog), "go: added example.com/chatter", "the chatter lands in the log")
	assert.NoFileExists(t, filepath.Join(dir, "kube-apiserver.tmp"))
}

// -kubectl builds kubectl beside the others, in a module of its own, with
// the version kubectl version --client reports stamped in; a second run
// keeps it. Without -kubectl none is built.
func TestRunBuildsKubectlWhenAsked(t *testing.T) {
	calls := withGo(t, fakeGo)
	root := t.TempDir()
	dir, err := run(context.Background(), []string{"-dir", root}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(dir, "kubectl"), "kubectl is optional")
	require.NoError(t, os.Remove(calls))
	var progress bytes.Buffer

	dir, err = run(context.Background(), []string{"-dir", root, "-kubectl"}, &progress)

	require.NoError(t, err, "progress:\n%s", progress.String())
	assert.FileExists(t, filepath.Join(dir, "kubectl"))
	recorded, err := os.ReadFile(calls)
	require.NoError(t, err)
	for _, want := range []string{
		"mod init envtest.local/kubectl",
		"mod edit -require=k8s.io/kubernetes@v1.35.3",
		"mod edit -replace=k8s.io/api=k8s.io/api@v0.35.3 -replace=k8s.io/apiserver=k8s.io/apiserver@v0.35.3\n",
		"mod edit -tool=k8s.io/kubernetes/cmd/kubectl",
		"-X k8s.io/component-base/version.gitVersion=v1.35.3 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35",
	} {
		assert.Contains(t, string(recorded), want, "go tool calls")
	}
	for _, built := range []string{"go.etcd.io/etcd/server/v3", "k8s.io/kubernetes/cmd/kube-apiserver"} {
		assert.NotContains(t, string(recorded), built, "etcd and kube-apiserver were there: only kubectl is built")
	}
	assert.Contains(t, progress.String(), "envtest: kubectl v1.35.3: ready")
	assert.FileExists(t, filepath.Join(root, "src", "kubectl-v1.35.3", "build.log"))

	require.NoError(t, os.Remove(calls))
	_, err = run(context.Background(), []string{"-dir", root, "-kubectl"}, &bytes.Buffer{})
	require.NoError(t, err)
	assert.NoFileExists(t, calls, "kubectl reports its version: nothing to build")
}

func TestRunKeepsBinariesThatReportTheirVersion(t *testing.T) {
	calls := withGo(t, fakeGo)
	root := t.TempDir()
	_, err := run(context.Background(), []string{"-dir", root}, &bytes.Buffer{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(calls))
	var progress bytes.Buffer

	dir, err := run(context.Background(), []string{"-dir", root}, &progress)

	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "k8s-v1.35.3-etcd-v3.6.8"), dir)
	assert.NoFileExists(t, calls, "nothing to build: the go tool is not run")
	assert.Equal(t, "envtest: assets in "+dir+"\n", progress.String())
}

func TestRunFailurePrintsLogTail(t *testing.T) {
	withGo(t, failingGo)
	root := t.TempDir()
	var progress bytes.Buffer

	_, err := run(context.Background(), []string{"-dir", root}, &progress)

	logPath := filepath.Join(root, "src", "etcd-v3.6.8", "build.log")
	require.Error(t, err)
	assert.Contains(t, err.Error(), logPath, "the error names the log")
	assert.Contains(t, progress.String(), "envtest: etcd v3.6.8: failed; last lines of "+logPath)
	assert.Contains(t, progress.String(), "  go: boom", "the log's tail is printed on failure")
	assert.NoFileExists(t, filepath.Join(root, "k8s-v1.35.3-etcd-v3.6.8", "etcd"))
}

func TestRunRejectsBadKubeVersion(t *testing.T) {
	withGo(t, fakeGo)
	_, err := run(context.Background(), []string{"-dir", t.TempDir(), "-kube-version", "1.35.3"}, &bytes.Buffer{})
	assert.ErrorContains(t, err, `"1.35.3" is not of the form v1.M.P`)
}

func TestStagingVersion(t *testing.T) {
	cases := map[string]struct {
		reason       string
		kube         string
		wantStaging  string
		wantMinor    string
		wantAnyError bool
	}{
		"Release":    {reason: "v1.M.P maps to v0.M.P", kube: "v1.35.3", wantStaging: "v0.35.3", wantMinor: "35"},
		"PreRelease": {reason: "a suffix is kept", kube: "v1.36.0-alpha.1", wantStaging: "v0.36.0-alpha.1", wantMinor: "36"},
		"NoV":        {reason: "the leading v is required", kube: "1.35.3", wantAnyError: true},
		"NoMinor":    {reason: "a minor is required", kube: "v1.", wantAnyError: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			staging, minor, err := stagingVersion(tc.kube)
			if tc.wantAnyError {
				assert.Error(t, err, tc.reason)
				return
			}
			require.NoError(t, err, tc.reason)
			assert.Equal(t, tc.wantStaging, staging, tc.reason)
			assert.Equal(t, tc.wantMinor, minor, tc.reason)
		})
	}
}

func TestGoEnvIsolatesThrowawayModule(t *testing.T) {
	env := goEnv([]string{"HOME=/h", "GOFLAGS=-mod=readonly -buildvcs=false", "GOWORK=/x/go.work"})
	// exec.Cmd uses the last value of a repeated key.
	assert.Equal(t, []string{"HOME=/h", "GOFLAGS=-mod=readonly -buildvcs=false", "GOWORK=/x/go.work", "GOWORK=off", "GOFLAGS=-buildvcs=false"}, env)
}

func TestDefaultRoot(t *testing.T) {
	t.Setenv(dirEnv, "")
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	got, err := defaultRoot()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(cache, "sliceclass", "envtest"), got, "default: the user cache")

	t.Setenv(dirEnv, "/elsewhere")
	got, err = defaultRoot()
	require.NoError(t, err)
	assert.Equal(t, "/elsewhere", got, dirEnv+" moves the root")
}

// TestControlPlaneFindsWhatItInstalls checks the two halves agree: binaries
// installed under the default root are found by a test in a module that has
// no bin/envtest.
func TestControlPlaneFindsWhatItInstalls(t *testing.T) {
	assert.Equal(t, dirEnv, controlplane.AssetsDirEnv, "one variable for both")
	root := t.TempDir()
	t.Setenv(dirEnv, root)
	t.Setenv("KUBEBUILDER_ASSETS", "")
	t.Chdir(t.TempDir())
	withGo(t, fakeGo)
	dir, err := run(context.Background(), nil, &bytes.Buffer{})
	require.NoError(t, err)

	got, err := controlplane.AssetsDir()

	require.NoError(t, err)
	assert.Equal(t, dir, got)
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// The side by side (this file, its children in sbschild.go) sets the
// example manager's memory against a template-shaped controller's and a
// plain client's, each its own process deciding its own backlog alone, so
// that the memory compared is all the process's own: the contract is
// the example manager's peak RSS at 2,000 slices against the template's in
// the same run.

// sbsProcess is one of the processes the side by side measures.
type sbsProcess struct {
	// name is what the table calls it.
	name string
	// mode names its class, its namespace and its log; for the bench's own
	// children it is also the -sbs-child mode.
	mode string
}

// The three processes, in the order they run, and the child modes of the
// bench binary.
const (
	sbsManager  = "manager"
	sbsTemplate = "template"
	sbsPlain    = "plain"
)

var sbsProcesses = []sbsProcess{
	{name: "example manager", mode: sbsManager},
	{name: "template-shaped controller", mode: sbsTemplate},
	{name: "plain client", mode: sbsPlain},
}

// class is the process's class; its namespace has the same name.
func (p sbsProcess) class() string { return "sbs-" + p.mode }

const (
	// sbsReadyLine is what the bench's children print on stdout once their
	// slices' informer has synced.
	sbsReadyLine = "ready"
	// sbsDecideTimeout bounds how long a process may take to decide its
	// backlog, start included.
	sbsDecideTimeout = 3 * time.Minute
	// sbsUpTimeout bounds how long a process may take to come up.
	sbsUpTimeout = time.Minute
	// sbsPoll is how often the parent lists a namespace to count decisions:
	// a list of 2,000 realistic slices is about 10 MB of JSON, which the
	// API server and the parent spend CPU on beside the measured process.
	sbsPoll = 500 * time.Millisecond
	// sbsSettle is how long a process runs after its last decision (or,
	// empty, after it is up) before its memory is read.
	sbsSettle      = 2 * time.Second
	sbsEmptySettle = 3 * time.Second
	// sbsStopTimeout is how long a process has to exit after SIGTERM
	// before it is killed.
	sbsStopTimeout = 10 * time.Second
	// sbsCaps are the example manager's caps: what each slice requests.
	sbsCaps = "cpu=4,memory=8Gi,pods=110"
)

// sbsFigures is what the side by side measures of one process.
type sbsFigures struct {
	// empty is its memory with no slice of its own, full with its n decided.
	empty, full procMem
	// took is from its start to the poll that saw all its slices decided.
	took time.Duration
}

// sideBySidePhase starts a control plane of its own (so that no slice of
// another phase is cached), builds the example manager, runs each of
// sbsProcesses alone, empty and then with a backlog of f.sbsN undecided
// realistic slices, and adds their memory, their time to decide and the
// target to t.
func sideBySidePhase(ctx context.Context, f flags, t *table) error {
	n := f.sbsN
	say("side by side: starting a control plane of its own...")
	cp, err := controlplane.New()
	if err != nil {
		return fmt.Errorf("side by side: starting its control plane: %w", err)
	}
	defer func() { _ = cp.Stop() }()
	dir, err := os.MkdirTemp("", "sliceclass-bench-sbs-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := controlplane.WriteKubeconfig(cp.Config, kubeconfig); err != nil {
		return err
	}
	managerBin, err := buildManager(ctx, dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("side by side: finding the bench binary: %w", err)
	}
	figures := map[string]sbsFigures{}
	for _, p := range sbsProcesses {
		if err := cp.CreateNamespace(ctx, p.class()); err != nil {
			return err
		}
		start := func() (*sbsRun, error) {
			if p.mode == sbsManager {
				return startManager(managerBin, kubeconfig, p, dir)
			}
			return startSBSChild(self, kubeconfig, p, dir)
		}
		var fig sbsFigures
		say("side by side: %s, empty...", p.name)
		if fig.empty, err = measureEmpty(start); err != nil {
			return err
		}
		say("side by side: %s: creating %d undecided realistic slices...", p.name, n)
		created := time.Now()
		if err := createMany(ctx, cp.Client, p.class(), n, func(int) string { return p.class() }, false); err != nil {
			return fmt.Errorf("side by side: creating the backlog of the %s: %w", p.name, err)
		}
		say("side by side: created them in %s", round(time.Since(created)))
		say("side by side: %s, deciding %d slices...", p.name, n)
		if fig.full, fig.took, err = measureBacklog(ctx, cp.Client, start, p, n); err != nil {
			return err
		}
		say("side by side: %s decided %d slices in %.1fs; peak RSS %s (empty %s)", p.name, n, fig.took.Seconds(), mib(fig.full.peak), mib(fig.empty.peak))
		if err := clearNamespace(ctx, cp.Client, p.class()); err != nil {
			return err
		}
		figures[p.mode] = fig
		addSBSRows(t, p, n, fig)
	}
	ratio := float64(figures[sbsManager].full.peak) / float64(figures[sbsTemplate].full.peak)
	t.target(fmt.Sprintf("peak RSS at %d slices, example manager / template-shaped controller (own processes)", n),
		fmt.Sprintf("%.2f", ratio), "≤ 1.00", ratio <= 1.00)
	return nil
}

// addSBSRows adds one process's figures to t.
func addSBSRows(t *table, p sbsProcess, n int, fig sbsFigures) {
	t.add(fmt.Sprintf("side by side, %s: peak RSS / RSS at %d slices (empty: peak / RSS)", p.name, n),
		fmt.Sprintf("%s / %s (%s / %s)", mib(fig.full.peak), mib(fig.full.rss), mib(fig.empty.peak), mib(fig.empty.rss)))
	t.add(fmt.Sprintf("side by side, %s: time to decide %d slices, from its start (polled every %s)", p.name, n, sbsPoll),
		fmt.Sprintf("%.1fs", fig.took.Seconds()))
	t.add(fmt.Sprintf("side by side, %s: bytes per cached slice, from peak RSS / from RSS", p.name),
		fmt.Sprintf("%.0f / %.0f", bytesPerSlice(fig.full.peak, fig.empty.peak, n), bytesPerSlice(fig.full.rss, fig.empty.rss, n)))
}

// buildManager builds the example manager into dir, from the module the
// bench is run in, and returns the binary's path.
func buildManager(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("side by side: go env GOMOD: %w", err)
	}
	root, err := moduleRoot(string(out))
	if err != nil {
		return "", fmt.Errorf("side by side: %w, or pass -sbs-n 0", err)
	}
	bin := filepath.Join(dir, "manager")
	say("side by side: building the example manager in %s...", root)
	start := time.Now()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./examples/manager")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("side by side: building ./examples/manager in %s: %w: %s", root, err, bytes.TrimSpace(out))
	}
	say("side by side: built the example manager in %s", round(time.Since(start)))
	return bin, nil
}

// moduleRoot is the directory of the go.mod that `go env GOMOD` printed:
// the binaries the bench builds (the example manager, the metering phase's
// two benches) are built from the module the bench is run in.
func moduleRoot(gomod string) (string, error) {
	gomod = strings.TrimSpace(gomod)
	switch {
	case gomod == "" || gomod == os.DevNull:
		return "", errors.New("not run in a Go module (go env GOMOD is empty): run the bench from the sliceclass repo")
	case !filepath.IsAbs(gomod) || filepath.Base(gomod) != "go.mod":
		return "", fmt.Errorf("go env GOMOD printed %q, not the path of a go.mod", gomod)
	}
	return filepath.Dir(gomod), nil
}

// sbsRun is a running process of the side by side.
type sbsRun struct {
	name string
	// metricsAddr is the example manager's metrics endpoint.
	metricsAddr string
	cmd         *exec.Cmd
	logPath     string
	started     time.Time
	// up closes once the process has come up; exited once it has exited,
	// exitErr set before.
	up      chan struct{}
	upOnce  sync.Once
	exited  chan struct{}
	exitErr error
}

// markUp records that the process has come up.
func (r *sbsRun) markUp() { r.upOnce.Do(func() { close(r.up) }) }

// startManager starts the example manager serving p's class with its
// defaults (one worker, an event per decision), its metrics on a free
// local port (r.metricsAddr), which the parent polls to know it is up,
// and its logs to a file in dir; extra are more flags.
func startManager(bin, kubeconfig string, p sbsProcess, dir string, extra ...string) (*sbsRun, error) {
	addr, err := freeLocalPort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"--kubeconfig", kubeconfig, "--class-name", p.class(), "--cap", sbsCaps,
		"--metrics-bind-address", addr, "--health-probe-bind-address", "0", "--zap-devel=false"}, extra...)
	cmd := exec.Command(bin, args...)
	r, logFile, err := newSBSRun(p, cmd, dir)
	if err != nil {
		return nil, err
	}
	r.metricsAddr = addr
	cmd.Stdout = logFile
	if err := r.start(logFile); err != nil {
		return nil, err
	}
	go func() {
		defer func() { _ = logFile.Close() }()
		r.exitErr = cmd.Wait()
		close(r.exited)
	}()
	go r.pollMetrics(addr, `controller="resourceslice-`+p.class()+`"`)
	return r, nil
}

// pollMetrics marks r up once its metrics endpoint at addr serves want (its
// controller's metrics, which appear when the controller starts).
func (r *sbsRun) pollMetrics(addr, want string) {
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-r.exited:
			return
		case <-time.After(100 * time.Millisecond):
		}
		resp, err := hc.Get("http://" + addr + "/metrics")
		if err != nil {
			continue
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err == nil && bytes.Contains(body, []byte(want)) {
			r.markUp()
			return
		}
	}
}

// startSBSChild starts the bench binary as p's child (sbschild.go), which
// says on stdout when it is up, with its stderr to a file in dir.
func startSBSChild(self, kubeconfig string, p sbsProcess, dir string) (*sbsRun, error) {
	// -kubeconfig is the flag controller-runtime registers: the child finds
	// its API server with ctrl.GetConfig, as a template's main does.
	cmd := exec.Command(self, "-sbs-child", p.mode, "-sbs-class", p.class(), "-kubeconfig", kubeconfig)
	r, logFile, err := newSBSRun(p, cmd, dir)
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		_ = logFile.Close()
		return nil, err
	}
	if err := r.start(logFile); err != nil {
		return nil, err
	}
	go func() {
		defer func() { _ = logFile.Close() }()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == sbsReadyLine {
				r.markUp()
			}
		}
		// Wait only once stdout is drained, as exec requires.
		r.exitErr = cmd.Wait()
		close(r.exited)
	}()
	return r, nil
}

// newSBSRun prepares r for cmd, with its stderr to a new log file in dir.
func newSBSRun(p sbsProcess, cmd *exec.Cmd, dir string) (*sbsRun, *os.File, error) {
	logFile, err := os.CreateTemp(dir, p.mode+"-*.log")
	if err != nil {
		return nil, nil, err
	}
	cmd.Stderr = logFile
	return &sbsRun{name: p.name, cmd: cmd, logPath: logFile.Name(), up: make(chan struct{}), exited: make(chan struct{})}, logFile, nil
}

// start starts r's process, closing its log file if it cannot.
func (r *sbsRun) start(logFile *os.File) error {
	r.started = time.Now()
	if err := r.cmd.Start(); err != nil {
		_ = logFile.Close()
		return fmt.Errorf("side by side: starting the %s: %w", r.name, err)
	}
	return nil
}

// exitedError says that r exited when it should have run on, with the end
// of its log.
func (r *sbsRun) exitedError() error {
	if r.exitErr == nil {
		return fmt.Errorf("side by side: the %s exited early, with status 0; the end of its log: %s", r.name, logTail(r.logPath, 5))
	}
	return fmt.Errorf("side by side: the %s exited early (%w); the end of its log: %s", r.name, r.exitErr, logTail(r.logPath, 5))
}

// waitUp waits for r to come up.
func (r *sbsRun) waitUp(timeout time.Duration) error {
	select {
	case <-r.up:
		return nil
	case <-r.exited:
		return r.exitedError()
	case <-time.After(timeout):
		return fmt.Errorf("side by side: the %s did not come up within %s; the end of its log: %s", r.name, timeout, logTail(r.logPath, 5))
	}
}

// sleep lets r run for d, failing if it exits meanwhile.
func (r *sbsRun) sleep(d time.Duration) error {
	select {
	case <-r.exited:
		return r.exitedError()
	case <-time.After(d):
		return nil
	}
}

// stop sends r SIGTERM, kills it if it has not exited within
// sbsStopTimeout, and says if it did not exit cleanly.
func (r *sbsRun) stop() error {
	select {
	case <-r.exited:
		return r.exitedError()
	default:
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		if r.exitErr != nil {
			return fmt.Errorf("side by side: the %s failed to stop cleanly (%w); the end of its log: %s", r.name, r.exitErr, logTail(r.logPath, 5))
		}
		return nil
	case <-time.After(sbsStopTimeout):
		_ = r.cmd.Process.Kill()
		<-r.exited
		return fmt.Errorf("side by side: the %s did not stop within %s of SIGTERM: killed", r.name, sbsStopTimeout)
	}
}

// kill ends r at once: for the paths that fail with it running.
func (r *sbsRun) kill() {
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// memory reads r's peak RSS and RSS.
func (r *sbsRun) memory() (procMem, error) {
	m, err := readProcMem(r.cmd.Process.Pid)
	if err != nil {
		return procMem{}, fmt.Errorf("side by side: reading the memory of the %s: %w", r.name, err)
	}
	return m, nil
}

// measureEmpty runs a process with no slice of its own: up, then
// sbsEmptySettle, then its memory.
func measureEmpty(start func() (*sbsRun, error)) (procMem, error) {
	r, err := start()
	if err != nil {
		return procMem{}, err
	}
	defer r.kill()
	if err := r.waitUp(sbsUpTimeout); err != nil {
		return procMem{}, err
	}
	if err := r.sleep(sbsEmptySettle); err != nil {
		return procMem{}, err
	}
	m, err := r.memory()
	if err != nil {
		return procMem{}, err
	}
	return m, r.stop()
}

// measureBacklog runs a process until its n slices are decided, then
// sbsSettle, and returns its memory and how long it took from its start.
func measureBacklog(ctx context.Context, c client.Client, start func() (*sbsRun, error), p sbsProcess, n int) (procMem, time.Duration, error) {
	r, err := start()
	if err != nil {
		return procMem{}, 0, err
	}
	defer r.kill()
	took, err := waitDecided(ctx, c, p.class(), n, r)
	if err != nil {
		return procMem{}, 0, err
	}
	if err := r.sleep(sbsSettle); err != nil {
		return procMem{}, 0, err
	}
	m, err := r.memory()
	if err != nil {
		return procMem{}, 0, err
	}
	return m, took, r.stop()
}

// waitDecided polls ns every sbsPoll until n of its slices are decided and
// returns the time since r started; it fails if r exits first or takes
// longer than sbsDecideTimeout.
func waitDecided(ctx context.Context, c client.Client, ns string, n int, r *sbsRun) (time.Duration, error) {
	deadline := r.started.Add(sbsDecideTimeout)
	for {
		decided, err := countDecided(ctx, c, ns)
		if err != nil {
			return 0, err
		}
		if decided >= n {
			return time.Since(r.started), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("side by side: the %s decided %d of %d slices in %s: timed out; the end of its log: %s",
				r.name, decided, n, sbsDecideTimeout, logTail(r.logPath, 5))
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-r.exited:
			return 0, r.exitedError()
		case <-time.After(sbsPoll):
		}
	}
}

// countDecided counts the decided slices of ns. It reads the API server's
// watch cache (resourceVersion 0), which spares etcd a 10 MB read each poll.
func countDecided(ctx context.Context, c client.Client, ns string) (int, error) {
	var list authv1beta1.ResourceSliceList
	if err := c.List(ctx, &list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: "0"}}); err != nil {
		return 0, fmt.Errorf("side by side: listing the slices of %s: %w", ns, err)
	}
	decided := 0
	for i := range list.Items {
		if conditions.IsDecided(&list.Items[i]) {
			decided++
		}
	}
	return decided, nil
}

// clearNamespace deletes ns's slices and waits until none is left, so that
// the next process, whose cache is cluster-wide, does not hold them.
func clearNamespace(ctx context.Context, c client.Client, ns string) error {
	if err := c.DeleteAllOf(ctx, &authv1beta1.ResourceSlice{}, client.InNamespace(ns)); err != nil {
		return fmt.Errorf("side by side: deleting the slices of %s: %w", ns, err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var list authv1beta1.ResourceSliceList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.Limit(1)); err != nil {
			return fmt.Errorf("side by side: listing the slices of %s: %w", ns, err)
		}
		if len(list.Items) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("side by side: slices of %s still there a minute after deleting them all", ns)
		}
		time.Sleep(sbsPoll)
	}
}

// freeLocalPort is a local address with a port free a moment ago, for a
// child's metrics endpoint that the parent must know the port of.
func freeLocalPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("side by side: finding a free port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// logTail is the last n lines of the log at path, for errors.
func logTail(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(unreadable: %v)", err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return "(empty)"
	}
	return strings.Join(lines, " | ")
}

// procMem is a process's resident set size and its peak, in bytes.
type procMem struct {
	rss, peak uint64
}

// readProcMem reads procMem from /proc/<pid>/status.
func readProcMem(pid int) (procMem, error) {
	path := filepath.Join("/proc", strconv.Itoa(pid), "status")
	f, err := os.Open(path)
	if err != nil {
		return procMem{}, err
	}
	defer func() { _ = f.Close() }()
	m, err := parseProcMem(f)
	if err != nil {
		return procMem{}, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// parseProcMem reads VmRSS and VmHWM, in kB, from a /proc/<pid>/status
// text. Both must be there: a process whose memory cannot be read must not
// count as using none.
func parseProcMem(r io.Reader) (procMem, error) {
	var m procMem
	var haveRSS, havePeak bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return procMem{}, fmt.Errorf("%s: want a size in kB, got %q", key, strings.TrimSpace(value))
		}
		kb, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return procMem{}, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			m.rss, haveRSS = kb*1024, true
		} else {
			m.peak, havePeak = kb*1024, true
		}
	}
	if err := sc.Err(); err != nil {
		return procMem{}, err
	}
	if !haveRSS || !havePeak {
		return procMem{}, fmt.Errorf("no VmRSS or no VmHWM (VmRSS: %v, VmHWM: %v)", haveRSS, havePeak)
	}
	return m, nil
}

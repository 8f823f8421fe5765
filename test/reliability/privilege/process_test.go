package privilege

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/testwait"
)

// managerProcess is the example manager running as a subprocess.
type managerProcess struct {
	cmd    *exec.Cmd
	stderr *scanWriter
	done   chan struct{}
	// err is Wait's answer, set when done is closed.
	err error
}

// startBinary starts the manager binary with args. onForbidden is called
// (once) when its stderr first mentions "forbidden", but for the refusals
// of the scenario's own admission policy (repeat_test.go), which the API
// server words "is forbidden" too.
func startBinary(t *testing.T, args []string, env []string, onForbidden func(line string)) *managerProcess {
	t.Helper()
	cmd := exec.Command(managerBin, args...)
	cmd.Env = append(os.Environ(), env...)
	p := &managerProcess{cmd: cmd, stderr: &scanWriter{word: "forbidden", except: "ValidatingAdmissionPolicy '" + refusePolicy + "'", onMatch: onForbidden}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() { p.kill() })
	return p
}

// stop sends SIGTERM and waits up to testwait.Timeout for the exit; it
// returns the exit code, or an error if the process did not exit in time.
func (p *managerProcess) stop() (int, error) {
	const timeout = testwait.Timeout
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return -1, err
	}
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), nil
	case <-time.After(timeout):
		p.kill()
		return -1, fmt.Errorf("the manager did not exit within %s of SIGTERM", timeout)
	}
}

// kill ends the process at once and waits for it.
func (p *managerProcess) kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// scanWriter keeps what is written to it and calls onMatch once, with the
// line, when a complete line contains word (case-insensitive) and not
// except.
type scanWriter struct {
	word, except string
	onMatch      func(line string)

	mu      sync.Mutex
	buf     bytes.Buffer
	partial []byte
	matched bool
}

// Write implements io.Writer.
func (w *scanWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(b)
	w.partial = append(w.partial, b...)
	var hit string
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if !w.matched && w.matches(line) {
			w.matched, hit = true, line
		}
	}
	w.mu.Unlock()
	if hit != "" && w.onMatch != nil {
		w.onMatch(hit)
	}
	return len(b), nil
}

// String returns everything written so far.
func (w *scanWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// matches reports whether line contains word and not except.
func (w *scanWriter) matches(line string) bool {
	return strings.Contains(strings.ToLower(line), w.word) && (w.except == "" || !strings.Contains(line, w.except))
}

// lines returns the lines written so far that match.
func (w *scanWriter) lines() []string {
	var out []string
	for _, l := range strings.Split(w.String(), "\n") {
		if w.matches(l) {
			out = append(out, l)
		}
	}
	return out
}

// tail returns the last n lines written, for a failure message.
func (w *scanWriter) tail(n int) string {
	lines := strings.Split(strings.TrimRight(w.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

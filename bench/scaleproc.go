package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"
)

// replicaProc is the parent's handle on a replica of the scale phase, run
// as a child process so that its heap and RSS are its own.
type replicaProc struct {
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	events <-chan scaleEvent
	// seen holds the events read so far, by name.
	seen map[string]scaleEvent
	// exited closes when the process has exited; exitAt and exitErr are
	// set before.
	exited  chan struct{}
	exitAt  time.Time
	exitErr error
	stopped bool
}

// startReplica starts a replica doing spec, reaching the API server
// through the config saved in cfgFile.
func startReplica(name, cfgFile string, spec scaleChildSpec) (*replicaProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-scale-child", string(raw), "-config", cfgFile)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting replica %s: %w", name, err)
	}
	events := make(chan scaleEvent, 64)
	p := &replicaProc{name: name, cmd: cmd, stdin: stdin, events: events, seen: map[string]scaleEvent{}, exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev scaleEvent
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Event == "" {
				say("replica %s: %s", name, sc.Text())
				continue
			}
			events <- ev
		}
		close(events)
		p.exitErr = cmd.Wait()
		p.exitAt = time.Now()
		close(p.exited)
	}()
	return p, nil
}

// await returns the replica's event what, waiting up to timeout for it.
// It fails if the replica exits first.
func (p *replicaProc) await(what string, timeout time.Duration) (scaleEvent, error) {
	if ev, ok := p.seen[what]; ok {
		return ev, nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-p.events:
			if !ok {
				<-p.exited
				if p.exitErr == nil {
					return scaleEvent{}, fmt.Errorf("replica %s exited before %q", p.name, what)
				}
				return scaleEvent{}, fmt.Errorf("replica %s exited before %q: %w", p.name, what, p.exitErr)
			}
			p.seen[ev.Event] = ev
			if ev.Event == what {
				return ev, nil
			}
		case <-timer.C:
			return scaleEvent{}, fmt.Errorf("replica %s: no %q within %s", p.name, what, timeout)
		}
	}
}

// stop asks the replica to stop (it cancels its manager's context, which
// releases its Lease) and returns when it asked.
func (p *replicaProc) stop() time.Time {
	p.stopped = true
	_ = p.stdin.Close()
	return time.Now()
}

// wait waits up to timeout for the replica to exit after stop, kills it
// if it has not, and returns its exit error.
func (p *replicaProc) wait(timeout time.Duration) error {
	go func() {
		// Drain what it prints while it stops.
		for range p.events {
		}
	}()
	select {
	case <-p.exited:
		if p.exitErr != nil {
			return fmt.Errorf("replica %s: %w", p.name, p.exitErr)
		}
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("replica %s did not stop within %s", p.name, timeout)
	}
}

// close stops the replica if nobody did and waits for it: for the paths
// that return early.
func (p *replicaProc) close() {
	if p.stopped {
		return
	}
	p.stop()
	_ = p.wait(time.Minute)
}

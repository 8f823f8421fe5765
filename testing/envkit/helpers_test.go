package envkit_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// recorder is a testing.TB that records failures: Fatal and FailNow end the
// goroutine that calls them, as they end a test's; Cleanup functions run
// with runCleanups.
type recorder struct {
	testing.TB

	mu       sync.Mutex
	errors   []string
	logs     []string
	fatal    string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recorder) Log(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprint(args...))
}

// logged returns what was logged.
func (r *recorder) logged() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.logs...)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *recorder) FailNow() { r.Fatalf("FailNow") }

func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// run calls f with r on a goroutine of its own, as a test runs, and
// returns once f returned or called Fatal.
func (r *recorder) run(f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

// runCleanups runs the Cleanup functions, last registered first.
func (r *recorder) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.run(func(testing.TB) { r.cleanups[i]() })
	}
}

// failures returns what was reported, Fatal last.
func (r *recorder) failures() (errors []string, fatal string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...), r.fatal
}

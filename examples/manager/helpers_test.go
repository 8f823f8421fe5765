package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sliceclass/sliceclass/testing/envkit"
)

// serve runs the manager with o against cfg until the test ends, then stops
// it and fails the test unless it stops cleanly within envkit.WaitTimeout.
// ended tells, without waiting, whether run has returned early, and with
// what.
func serve(t *testing.T, o options, cfg *rest.Config) (ended func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = run(ctx, o, cfg)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("run: %v", err)
			}
		case <-time.After(envkit.WaitTimeout):
			t.Error("manager did not stop")
		}
	})
	return func() (bool, error) {
		select {
		case <-done:
			return true, err
		default:
			return false, nil
		}
	}
}

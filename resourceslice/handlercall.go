package resourceslice

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/handler"
)

// handlerCalls calls the class's handler under one rule: at most one call
// per slice at a time. The workqueue never hands one slice to two workers,
// and a call is always waited for, as controller-runtime's
// ReconciliationTimeout does: WithHandlerTimeout sets a deadline on the
// call's context, and a call that returns after it is one timeout, with one
// HandlerFailed event, whatever it returned. Every call records its
// duration; every failure one error count and one event. A call is not
// started once the reconcile's context has ended (the controller
// stopping), and the answer of a call during which it ended is discarded,
// without blaming the handler: a stopped controller decides nothing.
type handlerCalls struct {
	h       handler.Handler
	timeout time.Duration
	class   string
	metrics *metrics
	// warn records a Warning event on the slice.
	warn func(rs *authv1beta1.ResourceSlice, reason, action, format string, args ...any)
}

// call runs the handler on rs (a copy of current it may change). Its errors
// are handler failures (isHandlerFailure), terminal when the handler made
// them so, or errStopped when ctx ended before or during the call.
func (c *handlerCalls) call(ctx context.Context, current, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
	if err := stopped(ctx); err != nil {
		return ctrl.Result{}, err
	}
	hctx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	start := time.Now()
	res, panicked, err := c.invoke(hctx, rs)
	c.metrics.duration.WithLabelValues(c.class).Observe(time.Since(start).Seconds())
	switch {
	case panicked != nil:
		c.metrics.errors.WithLabelValues(c.class, errKindPanic).Inc()
		log.FromContext(ctx).V(1).Info("handler panicked", "panic", panicked.value, "stack", panicked.stack)
		c.warn(current, reasonHandlerPanicked, actionHandle, "class %q handler panicked: %v", c.class, panicked.value)
		return ctrl.Result{}, handlerFailure{fmt.Errorf("handler panicked: %v", panicked.value)}
	case ctx.Err() != nil:
		log.FromContext(ctx).V(1).Info("the reconcile's context ended while the handler ran; its answer is discarded")
		return ctrl.Result{}, fmt.Errorf("handler call: %w", stopped(ctx))
	case c.timeout > 0 && ctx.Err() == nil && errors.Is(hctx.Err(), context.DeadlineExceeded):
		c.metrics.errors.WithLabelValues(c.class, errKindTimeout).Inc()
		c.warn(current, reasonHandlerFailed, actionHandle, "class %q handler timed out after %s; its answer is discarded", c.class, c.timeout)
		return ctrl.Result{}, handlerFailure{fmt.Errorf("handler timed out after %s", c.timeout)}
	case err != nil:
		c.metrics.errors.WithLabelValues(c.class, errKindError).Inc()
		c.warn(current, reasonHandlerFailed, actionHandle, "class %q handler failed: %v", c.class, err)
		return ctrl.Result{}, handlerFailure{fmt.Errorf("handler: %w", err)}
	}
	return res, nil
}

type panicValue struct {
	value any
	stack string
}

// invoke calls the handler, turning a panic into a value.
func (c *handlerCalls) invoke(ctx context.Context, rs *authv1beta1.ResourceSlice) (res ctrl.Result, p *panicValue, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, p, err = ctrl.Result{}, &panicValue{value: v, stack: string(debug.Stack())}, nil
		}
	}()
	res, err = c.h.Handle(ctx, rs)
	return res, nil, err
}

// handlerFailure marks an error as the handler's (counted by
// WithMaxRetries), keeping it terminal if the handler made it so.
type handlerFailure struct{ error }

func (h handlerFailure) Unwrap() error { return h.error }

func isHandlerFailure(err error) bool {
	var h handlerFailure
	return errors.As(err, &h)
}

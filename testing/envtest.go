package slicetest

import (
	"context"
	"fmt"
	"time"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

// The helpers in this file play Liqo's part on a real API server (envtest,
// package github.com/sliceclass/sliceclass/testing/controlplane): they are
// for integration tests of a manager, where the Harness's fake client is not
// enough.

// pollInterval is how often WaitForDecision reads the slice.
const pollInterval = 50 * time.Millisecond

// CreateAsLiqo creates rs and then writes rs.Status with a status update,
// the two writes Liqo makes on the provider: its replicator creates the slice
// (an API server drops the status of an object it creates when the resource
// has a status subresource), and its ResourceSlice controller then writes the
// status with an Update of the whole status, as a PUT.
//
// Build rs with NewSlice to get the status Liqo writes once it has
// authenticated the consumer (Authentication Accepted, authParams set). With
// the Unauthenticated option the status is empty, no status write is made,
// and the slice waits, undecided, until Authenticate plays Liqo's acceptance.
//
// Creating the slice with client.Create alone leaves it without its
// Authentication condition, and a class controller never decides it:
//
//	err := c.Create(ctx, slicetest.NewSlice("s1"))                  // wrong: status dropped
//	err := slicetest.CreateAsLiqo(ctx, c, slicetest.NewSlice("s1")) // right
//
// On success rs holds the object as stored. The status is written with a PUT,
// never a PATCH, so a test counting the API server's PATCH requests on
// resourceslices/status counts only the class controller's.
func CreateAsLiqo(ctx context.Context, c client.Client, rs *authv1beta1.ResourceSlice) error {
	status := *rs.Status.DeepCopy()
	if err := c.Create(ctx, rs); err != nil {
		return fmt.Errorf("slicetest: creating slice %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	if equality.Semantic.DeepEqual(status, authv1beta1.ResourceSliceStatus{}) {
		return nil
	}
	rs.Status = status
	if err := c.Status().Update(ctx, rs); err != nil {
		return fmt.Errorf("slicetest: writing the status of slice %s/%s as Liqo: %w", rs.Namespace, rs.Name, err)
	}
	return nil
}

// Authenticate writes what Liqo's ResourceSlice controller writes on the
// provider when it accepts the consumer's authentication: the Authentication
// condition Accepted and, when they are missing, authParams (those NewSlice
// sets). It reads the slice at key, writes its status with an Update as Liqo
// does, and retries on a conflict with a concurrent writer, such as the class
// controller.
//
// Use it on a slice created with the Unauthenticated option, to test that a
// slice is decided only once Liqo has authenticated it.
func Authenticate(ctx context.Context, c client.Client, key types.NamespacedName) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var rs authv1beta1.ResourceSlice
		if err := c.Get(ctx, key, &rs); err != nil {
			return err
		}
		authenticate(&rs)
		return c.Status().Update(ctx, &rs)
	})
	if err != nil {
		return fmt.Errorf("slicetest: authenticating slice %s: %w", key, err)
	}
	return nil
}

// authenticate sets the Authentication condition and authParams as Liqo's
// ResourceSlice controller does once it accepts the consumer.
func authenticate(rs *authv1beta1.ResourceSlice) {
	if rs.Status.AuthParams == nil {
		rs.Status.AuthParams = &authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: []byte("crt"), APIServer: "https://" + DefaultProvider + ":6443"}
	}
	sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "ResourceSliceAuthenticationAccepted", "ResourceSlice authentication accepted")
}

// WaitForDecision reads the slice at key until its Resources condition is
// Accepted or Denied, and returns it. It waits as long as ctx allows: give it
// a context with a deadline (envkit.WaitTimeout where the test expects a
// decision: it returns as soon as there is one). A slice not found yet (e.g.
// c is a manager's cache that has not seen it) is waited for; any other read
// error is returned at once.
//
// When ctx ends first, it returns the slice as last read (nil if it was never
// found) and an error that wraps ctx.Err() and names the slice's conditions;
// a test that expects no decision checks for context.DeadlineExceeded:
//
//	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
//	defer cancel()
//	_, err := slicetest.WaitForDecision(ctx, c, key)
//	require.ErrorIs(t, err, context.DeadlineExceeded) // still undecided
func WaitForDecision(ctx context.Context, c client.Reader, key types.NamespacedName) (*authv1beta1.ResourceSlice, error) {
	// Each read gets ctx's cancellation but not its deadline: client-go's
	// rate limiter fails a request that would wait past the deadline with an
	// error that does not wrap context.DeadlineExceeded, before ctx ends.
	// Without the deadline the read waits its turn and is cancelled when ctx
	// ends, so a timeout is always reported as one.
	readCtx, cancelReads := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReads()
	defer context.AfterFunc(ctx, cancelReads)()

	var last *authv1beta1.ResourceSlice
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
		var rs authv1beta1.ResourceSlice
		switch err := c.Get(readCtx, key, &rs); {
		case apierrors.IsNotFound(err):
			return false, nil
		case err != nil:
			return false, err
		}
		last = &rs
		return conditions.IsDecided(&rs), nil
	})
	switch {
	case err == nil:
		return last, nil
	case ctx.Err() != nil && last == nil:
		return nil, fmt.Errorf("slicetest: slice %s got no decision: it was never found: %w", key, ctx.Err())
	case ctx.Err() != nil:
		return last, fmt.Errorf("slicetest: slice %s got no decision (conditions %+v): %w", key, last.Status.Conditions, ctx.Err())
	default:
		return last, fmt.Errorf("slicetest: waiting for a decision on slice %s: %w", key, err)
	}
}

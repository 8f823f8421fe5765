package classlease

import (
	"context"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sliceclass/sliceclass/internal/owned"
)

// Class lease names and timing.
const (
	// Label labels a class Lease with the class it stands for, the label
	// every object the class's controller owns carries:
	// kubectl get leases -l sliceclass.io/class lists the served classes.
	Label = owned.LabelClass
	// Duration is how long a class Lease stays live without renewal.
	Duration   = 40 * time.Second
	leaseRenew = 10 * time.Second
	// releaseTimeout bounds the release of the Lease when its class stops:
	// the one request made after the controller's context ended, so that
	// the class shows unserved at once rather than after Duration.
	releaseTimeout = 5 * time.Second
)

// Name is the name of class's Lease: "sliceclass-class-<class>".
func Name(class string) string { return "sliceclass-class-" + class }

// Lease keeps class's Lease renewed while its controller runs.
type Lease struct {
	// r reads the Lease from the API server (no Lease informer is started);
	// c writes it.
	r         client.Reader
	c         client.Client
	class     string
	namespace string
	identity  string
}

// Identity is who holds a Lease this process renews: the POD_NAME
// environment variable (as a Deployment sets it from the pod's name), else
// the host name, else "unknown". It is read when called: a class reads it
// as it is registered.
func Identity() string {
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	if id, err := os.Hostname(); err == nil && id != "" {
		return id
	}
	return "unknown"
}

// New returns the Lease of class in namespace, held as identity
// (Identity): r reads it from the API server (no Lease informer is
// started), c writes it.
func New(r client.Reader, c client.Client, class, namespace, identity string) *Lease {
	return &Lease{r: r, c: c, class: class, namespace: namespace, identity: identity}
}

// Start renews the Lease every leaseRenew until ctx ends, then releases it
// (within releaseTimeout, on ctx's values) and returns.
func (l *Lease) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("lease", Name(l.class), "namespace", l.namespace)
	for {
		if err := l.renew(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "cannot renew the class Lease; retrying")
		}
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
			defer cancel()
			if err := l.release(rctx); err != nil {
				logger.Error(err, "cannot release the class Lease; it expires on its own")
			}
			return nil
		case <-time.After(leaseRenew):
		}
	}
}

func (l *Lease) renew(ctx context.Context) error {
	now := metav1.NewMicroTime(time.Now())
	var lease coordinationv1.Lease
	err := l.r.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: Name(l.class)}, &lease)
	if apierrors.IsNotFound(err) {
		lease = coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: Name(l.class), Labels: map[string]string{Label: l.class}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(l.identity),
				LeaseDurationSeconds: ptr.To(int32(Duration / time.Second)),
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		return l.c.Create(ctx, &lease)
	}
	if err != nil {
		return err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.identity {
		lease.Spec.AcquireTime = &now
	}
	lease.Spec.HolderIdentity = ptr.To(l.identity)
	lease.Spec.LeaseDurationSeconds = ptr.To(int32(Duration / time.Second))
	lease.Spec.RenewTime = &now
	if lease.Labels == nil {
		lease.Labels = map[string]string{}
	}
	lease.Labels[Label] = l.class
	return l.c.Update(ctx, &lease)
}

// release deletes the Lease if this process still holds it.
func (l *Lease) release(ctx context.Context) error {
	var lease coordinationv1.Lease
	if err := l.r.Get(ctx, client.ObjectKey{Namespace: l.namespace, Name: Name(l.class)}, &lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != l.identity {
		return nil
	}
	return client.IgnoreNotFound(l.c.Delete(ctx, &lease, client.Preconditions{ResourceVersion: &lease.ResourceVersion}))
}

// Live reports whether a class Lease is held and renewed recently.
func Live(lease *coordinationv1.Lease, now time.Time) bool {
	until, held := heldUntil(lease)
	return held && until.After(now)
}

// heldUntil is when the Lease expires unless renewed; held is false for a
// Lease nobody holds.
func heldUntil(lease *coordinationv1.Lease) (until time.Time, held bool) {
	s := lease.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil {
		return time.Time{}, false
	}
	d := Duration
	if s.LeaseDurationSeconds != nil {
		d = time.Duration(*s.LeaseDurationSeconds) * time.Second
	}
	return s.RenewTime.Add(d), true
}

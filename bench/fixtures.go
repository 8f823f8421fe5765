package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/handler"
	slicetest "github.com/sliceclass/sliceclass/testing"
	"github.com/sliceclass/sliceclass/testing/controlplane"
)

// realisticSlice is an authenticated, replicated slice with a ~1 KiB CSR, as
// Liqo leaves it.
func realisticSlice(ns, name, class string, decided bool) *authv1beta1.ResourceSlice {
	rs := slicetest.NewSlice(name, slicetest.WithNamespace(ns), slicetest.WithClass(class),
		slicetest.WithRequest(corev1.ResourceCPU, "4"), slicetest.WithRequest(corev1.ResourceMemory, "8Gi"), slicetest.WithRequest(corev1.ResourcePods, "110"))
	csr := make([]byte, 1024)
	_, _ = rand.Read(csr)
	rs.Spec.CSR = csr
	crt := make([]byte, 1200)
	_, _ = rand.Read(crt)
	rs.Status.AuthParams.SignedCRT = crt
	rs.Status.AuthParams.CA = crt[:800]
	if decided {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted as requested")
	}
	return rs
}

// createMany creates n slices (create, then a status PUT as Liqo would) with
// 8 parallel writers.
func createMany(ctx context.Context, c client.Client, ns string, n int, class func(int) string, decided bool) error {
	return parallel(8, n, func(i int) error {
		rs := realisticSlice(ns, fmt.Sprintf("s-%05d", i), class(i), decided)
		rs.Labels[bucketLabel] = strconv.Itoa(i / bucketSize)
		return slicetest.CreateAsLiqo(ctx, c, rs)
	})
}

// parallel runs f(0..n-1) on w goroutines and returns the first error.
func parallel(w, n int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// acceptAll grants every slice what it requests.
func acceptAll() handler.Handler {
	return handler.Func(func(_ context.Context, rs *authv1beta1.ResourceSlice) (ctrl.Result, error) {
		rs.Status.Resources = rs.Spec.Resources.DeepCopy()
		conditions.Accept(rs, "Granted", "granted as requested")
		return ctrl.Result{}, nil
	})
}

// newManager is a manager with its metrics and probe servers off.
func newManager(cp *controlplane.ControlPlane, configure func(*manager.Options)) (manager.Manager, error) {
	opts := manager.Options{Scheme: cp.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"}
	if configure != nil {
		configure(&opts)
	}
	return manager.New(cp.Config, opts)
}

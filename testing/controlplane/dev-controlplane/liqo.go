package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	tenantnamespace "github.com/liqotech/liqo/pkg/tenantNamespace"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/sliceclass/sliceclass/testing/controlplane"
	"github.com/sliceclass/sliceclass/testing/envkit"
)

// defaultConsumers are the consumers given a tenant namespace without
// -consumers.
const defaultConsumers = "acme,globex"

// parseConsumers splits -consumers: cluster IDs, each of which must make a
// valid namespace name (liqo-tenant-<id>), none twice.
func parseConsumers(s string) ([]string, error) {
	var ids []string
	seen := map[string]bool{}
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if errs := validation.IsDNS1123Label(tenantnamespace.NamePrefix + "-" + id); len(errs) > 0 {
			return nil, fmt.Errorf("-consumers: %q cannot name a tenant namespace: %s", id, strings.Join(errs, "; "))
		}
		if seen[id] {
			return nil, fmt.Errorf("-consumers: %q given twice", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil, errors.New("-consumers: name at least one consumer")
	}
	return ids, nil
}

// liqo plays Liqo's part on the provider for slices created with kubectl:
// the consumers' tenant namespaces and Tenants, the authentication of their
// slices (authenticator) and Liqo's own QuotaCreator.
type liqo struct {
	mgr manager.Manager
}

// newLiqo creates each consumer's tenant namespace with Liqo's own tenant
// namespace manager (its name and labels are Liqo's) and an Active Tenant
// in it, as Liqo does when a consumer peers, and builds the manager that
// runs Liqo's controllers. It returns the namespaces, in the consumers'
// order.
func newLiqo(ctx context.Context, cp *controlplane.ControlPlane, consumers []string, log logr.Logger) (*liqo, []string, error) {
	clientset, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, nil, err
	}
	tenants := tenantnamespace.NewManager(clientset, cp.Scheme)
	var namespaces []string
	for _, id := range consumers {
		ns, err := tenants.CreateNamespace(ctx, liqov1beta1.ClusterID(id))
		if err != nil {
			return nil, nil, fmt.Errorf("creating the tenant namespace of consumer %s: %w", id, err)
		}
		if _, err := envkit.CreateTenant(ctx, cp.Client, ns.Name, id, authv1beta1.TenantConditionActive); err != nil {
			return nil, nil, err
		}
		namespaces = append(namespaces, ns.Name)
	}
	mgr, err := manager.New(cp.Config, manager.Options{
		Scheme:                 cp.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 log,
		// controller-runtime refuses a controller name a manager of the
		// process used before: the command runs one, its tests several.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, nil, err
	}
	if err := addAuthenticator(mgr); err != nil {
		return nil, nil, err
	}
	if err := envkit.AddLiqoQuotaCreator(mgr); err != nil {
		return nil, nil, err
	}
	return &liqo{mgr: mgr}, namespaces, nil
}

// start runs Liqo's controllers until ctx ends; done is closed once they
// have stopped, and err then says why (nil after ctx ended).
func (l *liqo) start(ctx context.Context) *running {
	r := &running{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		r.err = l.mgr.Start(ctx)
	}()
	return r
}

// running is a started manager.
type running struct {
	done chan struct{}
	err  error
}

// wait blocks until the manager has stopped and returns its error.
func (r *running) wait() error {
	<-r.done
	return r.err
}

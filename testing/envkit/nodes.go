package envkit

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NodeOption changes a node CreateNode makes.
type NodeOption func(*corev1.Node)

// WithNodeLabels adds labels to the node, those a node pool selects it by.
func WithNodeLabels(labels map[string]string) NodeOption {
	return func(n *corev1.Node) {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		maps.Copy(n.Labels, labels)
	}
}

// NotReady makes the node's Ready condition False, as the node lifecycle
// controller leaves a node whose kubelet stopped reporting: a node pool
// does not count it.
func NotReady() NodeOption {
	return func(n *corev1.Node) {
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == corev1.NodeReady {
				n.Status.Conditions[i].Status = corev1.ConditionFalse
				n.Status.Conditions[i].Reason = "KubeletNotReady"
			}
		}
	}
}

// Unschedulable cordons the node (spec.unschedulable): a node pool does
// not count it.
func Unschedulable() NodeOption {
	return func(n *corev1.Node) { n.Spec.Unschedulable = true }
}

// CreateNode creates a node with allocatable (and the same capacity),
// Ready unless NotReady is given, and writes its status through the
// status subresource as the kubelet does: an API server drops the status
// of an object it creates. On success the returned node is as stored.
//
// A node pool (budget.NewNodePool) sums the allocatable of such nodes that
// match its selector:
//
//	_, err := envkit.CreateNode(ctx, cp.Client, "gpu-1",
//		corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("2"), "cpu": resource.MustParse("32")},
//		envkit.WithNodeLabels(map[string]string{"pool": "gpu"}))
func CreateNode(ctx context.Context, c client.Client, name string, allocatable corev1.ResourceList, opts ...NodeOption) (*corev1.Node, error) {
	now := metav1.Now()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{
			Capacity:    allocatable.DeepCopy(),
			Allocatable: allocatable.DeepCopy(),
			Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: now, LastTransitionTime: now,
			}},
		},
	}
	for _, o := range opts {
		o(n)
	}
	status := *n.Status.DeepCopy()
	if err := c.Create(ctx, n); err != nil {
		return nil, fmt.Errorf("envkit: creating node %s: %w", name, err)
	}
	n.Status = status
	if err := c.Status().Update(ctx, n); err != nil {
		return nil, fmt.Errorf("envkit: writing the status of node %s: %w", name, err)
	}
	return n, nil
}

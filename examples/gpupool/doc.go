// Package gpupool is an example class policy selling a pool of GPU nodes:
// a node-pool budget (budget.NewNodePool) sizes the class from the nodes
// themselves, a per-consumer limit (budget.WithConsumerLimit) keeps one
// consumer from taking the whole pool, and the policy pins each offer to
// the pool's nodes (budget.Budget.PinToNodePool) so that the consumer's virtual node
// shows their labels and its virtual kubelet schedules onto them.
//
// The policy is the decision alone: it grants the GPUs a slice asks for,
// with the other resources the pool counts (cpu and memory, say) as asked,
// drops what the pool does not count, and denies a slice asking for no GPU.
// Whether the offer fits the pool and the consumer's limit is the budget's
// call: a slice that does not fit is Denied with budget.ReasonExhausted or
// budget.ReasonConsumerLimit and admitted, in fair order, once it fits.
//
// Liqo's provider does not enforce status.nodeSelector: the consumer's
// virtual kubelet applies it to the pods it offloads.
package gpupool

// Package failover is the reliability suite's leader-failover part: two
// leader-elected managers ("replicas", as two pods would run them) serve one
// class on a real kube-apiserver and etcd; the leader vanishes without
// releasing its lease, like a crashed pod, and the standby must take over,
// rebuild the class's budget from the cluster, take the class Lease and
// decide every slice exactly once. It also measures what controller-runtime's
// EnableWarmup (the standby starts its informers before it leads) does to
// the failover time.
//
// Each test logs its figures on one line starting "RELIABILITY:". The large
// EnableWarmup measurement (2000 slices, three rounds per setting) runs only
// with SLICECLASS_RELIABILITY_FULL=1; without it a small backlog and one
// round per setting check correctness.
package failover

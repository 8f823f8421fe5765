// Package classlease makes "who serves class X" visible cluster-wide: a
// class controller holds a coordination.k8s.io Lease per class it serves
// (Lease), and the unserved reporter (Reporter) flags slices whose class no
// live Lease stands for. The public entry points are
// resourceslice.WithClassLease and resourceslice.AddUnservedReporter.
package classlease

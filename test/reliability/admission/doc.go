// Package admission is the admission part of the reliability suite: it
// applies examples/manager/deploy/admission-policy.yaml, a
// ValidatingAdmissionPolicy, to a real kube-apiserver and etcd with Liqo's
// CRDs, and proves that it refuses the ResourceSlice quantities that are
// slow to decode (1e-100000000 takes apimachinery's ParseQuantity tens of
// seconds and hundreds of MB, in every typed client that reads the slice),
// in spec and in status, while it admits the quantities slices carry, and
// quantities stored before the policy as long as they are left unchanged.
//
// The slices with bad quantities are written as unstructured objects: a
// typed client would have to parse the quantity itself.
//
// Run it with
//
//	go test -race -v ./test/reliability/admission/
package admission

package conditions_test

import (
	"testing"

	authv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"

	"github.com/sliceclass/sliceclass/conditions"
	"github.com/sliceclass/sliceclass/internal/sliceconds"
)

func decidedSlice() *authv1beta1.ResourceSlice {
	rs := &authv1beta1.ResourceSlice{}
	sliceconds.Set(rs, authv1beta1.ResourceSliceConditionTypeAuthentication, authv1beta1.ResourceSliceConditionAccepted, "ResourceSliceAuthenticationAccepted", "ok")
	conditions.Accept(rs, "Granted", "granted")
	return rs
}

func BenchmarkAcceptUnchanged(b *testing.B) {
	rs := decidedSlice()
	b.ReportAllocs()
	for b.Loop() {
		if conditions.Accept(rs, "Granted", "granted") {
			b.Fatal("re-accepting the same decision must change nothing")
		}
	}
}

func BenchmarkAcceptFlip(b *testing.B) {
	rs := decidedSlice()
	b.ReportAllocs()
	for b.Loop() {
		conditions.Deny(rs, "Full", "")
		conditions.Accept(rs, "Granted", "granted")
	}
}

func BenchmarkIsAuthenticated(b *testing.B) {
	rs := decidedSlice()
	b.ReportAllocs()
	for b.Loop() {
		if !conditions.IsAuthenticated(rs) {
			b.Fatal("want authenticated")
		}
	}
}

//go:build sliceclass_nometering

package metering

// Enabled reports whether metering is compiled in: the build tag
// sliceclass_nometering compiled it out.
const Enabled = false

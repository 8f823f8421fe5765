//go:build !sliceclass_nometering

package metering

// Enabled reports whether metering is compiled in (see the package
// comment: the build tag sliceclass_nometering compiles it out).
const Enabled = true

package main

import (
	"bytes"
	"io"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/testing/envkit"
)

func TestDemo(t *testing.T) {
	envkit.SkipWithoutControlPlane(t) // run starts one
	var out bytes.Buffer
	require.NoError(t, run(io.Discard, &out), out.String())
	for _, want := range []string{"ResourcesCapped", "TenantDrained", "BudgetExhausted", "waiting (no controller for class)", "9 slices: 5 Accepted, 3 Denied, 1 undecided", "2 slices: 2 Accepted, 0 Denied, 0 undecided",
		"GPU node added: pool gpu total nvidia.com/gpu: 2 → 6", "ConsumerLimitReached", "4 slices: 3 Accepted, 1 Denied, 0 undecided",
		"burst: carol's single slice Accepted (fair order); alice's burst: 3 of 6 Accepted, the rest wait",
		// The SliceBudget's status as the slices come and as the operator
		// edits its total and a consumer's limit.
		"team   True    1         1        6         10            4",
		"team   True    2         0        12        12            0",
		"liqo-tenant-carol/team-c  team   cpu=6      cpu=0    Accepted  Reclaimed",
		"team   True    2         0        6         12            6",
		// The cohort: spot borrows all gold has idle; gold's slice takes
		// back the 2 it lacks, spot keeps its own 1 and 1 still lent.
		"tier-spot  True   1         0        4         1             0              3             0",
		"liqo-tenant-carol/spot-1  tier-spot  cpu=4      cpu=2    Accepted  Reclaimed",
		"tier-gold  True   1         0        3         4             0              0             1",
		// Metering: one consumer's CPU-seconds after the tour.
		"metering: consumer liqo-tenant-alice held "} {
		assert.Contains(t, out.String(), want, "demo output lacks %q", want)
	}
	m := regexp.MustCompile(`metering: consumer liqo-tenant-alice held ([0-9.]+) CPU-seconds`).FindStringSubmatch(out.String())
	require.NotNil(t, m, "the demo prints alice's CPU-seconds")
	held, err := strconv.ParseFloat(m[1], 64)
	require.NoError(t, err)
	assert.Positive(t, held, "alice's shared slices held CPU during the tour")
}

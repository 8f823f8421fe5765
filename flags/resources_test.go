package flags_test

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sliceclass/sliceclass/flags"
)

func TestParseResourceList(t *testing.T) {
	for _, tc := range []struct {
		reason, in string
		want       map[corev1.ResourceName]string
		err        string
	}{
		{reason: "the documented form", in: "cpu=4,memory=8Gi,nvidia.com/gpu=2",
			want: map[corev1.ResourceName]string{"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": "2"}},
		{reason: "spaces around entries", in: " cpu = 500m , pods=110 ", want: map[corev1.ResourceName]string{"cpu": "500m", "pods": "110"}},
		{reason: "nothing is the empty list", in: "  ", want: map[corev1.ResourceName]string{}},
		{reason: "no quantity", in: "cpu", err: `"cpu": want name=quantity`},
		{reason: "no name", in: "=4", err: "want name=quantity"},
		{reason: "a trailing comma", in: "cpu=4,", err: "want name=quantity"},
		{reason: "a malformed quantity", in: "cpu=four", err: `"cpu=four"`},
		{reason: "a negative quantity", in: "cpu=-1", err: "negative quantity -1"},
		{reason: "beyond what a Quantity holds exactly", in: "cpu=1000E", err: "larger than"},
		{reason: "a name twice", in: "cpu=1,cpu=2", err: "cpu given twice"},
	} {
		got, err := flags.ParseResourceList(tc.in)
		if tc.err != "" {
			if assert.Error(t, err, tc.reason) {
				assert.Contains(t, err.Error(), tc.err, tc.reason)
			}
			continue
		}
		require.NoError(t, err, tc.reason)
		require.Len(t, got, len(tc.want), tc.reason)
		for name, q := range tc.want {
			g := got[name]
			assert.Zero(t, g.Cmp(resource.MustParse(q)), "%s: %s=%s, want %s", tc.reason, name, g.String(), q)
		}
		formatted := (*flags.ResourceList)(&got).String()
		again, err := flags.ParseResourceList(formatted)
		require.NoError(t, err, "%s: the formatted list parses", tc.reason)
		assert.Equal(t, formatted, (*flags.ResourceList)(&again).String(), tc.reason)
	}
	assert.Equal(t, "cpu=4,memory=8Gi", (&flags.ResourceList{
		corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourceCPU: resource.MustParse("4")}).String(), "names sorted")
}

func TestResourceListFlag(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var limit flags.ResourceList
	fs.Var(&limit, "limit", "")
	require.NoError(t, fs.Parse([]string{"--limit=cpu=2", "--limit=cpu=32,memory=64Gi"}))
	assert.Equal(t, "cpu=32,memory=64Gi", limit.String(), "the last use wins")
	assert.Len(t, corev1.ResourceList(limit), 2)
	assert.Error(t, fs.Parse([]string{"--limit=cpu=-1"}))
}

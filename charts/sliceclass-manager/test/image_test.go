package charttest

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDefaultImageIsTheBuiltOne checks that the chart's default image is the
// reference `make image` writes into its tarball, so that loading the
// tarball and installing with defaults runs that image.
func TestDefaultImageIsTheBuiltOne(t *testing.T) {
	out, err := exec.Command("make", "-s", "--no-print-directory", "-C", repoRoot, "print-image").Output()
	require.NoError(t, err, "make print-image")
	built := strings.TrimSpace(string(out))
	require.NotEmpty(t, built)

	_, c := managerContainer(t, render(t, "liqo", ""))
	assert.Equal(t, built, c.Image, "the chart's default image.repository:image.tag")
	assert.Equal(t, "IfNotPresent", string(c.ImagePullPolicy), "a loaded image is not pulled")
}

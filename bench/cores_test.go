package main

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sliceclass/sliceclass/internal/testwait"
)

// childrenOf finds a process this one started, by its parent's pid in
// /proc, and comm and statFields read it; a gone process has no fields.
func TestChildrenOfFindsAStartedProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	children, err := childrenOf(os.Getpid())
	require.NoError(t, err)
	assert.Contains(t, children, cmd.Process.Pid)
	assert.Equal(t, "sleep", comm(cmd.Process.Pid))
	fields := statFields(cmd.Process.Pid)
	require.Greater(t, len(fields), 12, "state, parent, ... utime, stime")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	assert.Eventually(t, func() bool { return statFields(cmd.Process.Pid) == nil }, testwait.Timeout, 10*time.Millisecond)
	children, err = childrenOf(os.Getpid())
	require.NoError(t, err)
	assert.NotContains(t, children, cmd.Process.Pid)
}

// set replaces a figure's value where the figure is, or adds it.
func TestTableSet(t *testing.T) {
	var tb table
	tb.add("machine", "2 cores")
	tb.add("other", "x")
	tb.set("machine", "2 cores: split")
	tb.set("new", "y")
	assert.Equal(t, []row{{metric: "machine", value: "2 cores: split"}, {metric: "other", value: "x"}, {metric: "new", value: "y"}}, tb.figures)
}

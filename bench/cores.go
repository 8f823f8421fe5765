package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// splitCores gives the control plane's processes (the API server and etcd,
// this process's children) core 0 and this process (the controllers
// measured, and the load that drives them) the other cores, as on a
// cluster where the API server runs on machines of its own: a controller's
// figures then move with its own work, not with the API server's. It needs
// two cores or more, and applies to every thread the processes have now
// and will start.
func splitCores() (string, error) {
	n := runtime.NumCPU()
	if n < 2 {
		return "", errors.New("-split-cores needs 2 cores or more")
	}
	var server, rest unix.CPUSet
	server.Set(0)
	for i := 1; i < n; i++ {
		rest.Set(i)
	}
	children, err := childrenOf(os.Getpid())
	if err != nil {
		return "", err
	}
	if len(children) == 0 {
		return "", errors.New("-split-cores: the control plane has no process of its own")
	}
	var names []string
	for _, pid := range children {
		if err := pin(pid, &server); err != nil {
			return "", err
		}
		names = append(names, comm(pid))
	}
	if err := pin(os.Getpid(), &rest); err != nil {
		return "", err
	}
	return fmt.Sprintf("core 0 for %s; cores 1–%d for the controller and its load", strings.Join(names, ", "), n-1), nil
}

// pin sets the CPUs of every thread of pid to set; threads they start
// inherit it.
func pin(pid int, set *unix.CPUSet) error {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("listing the threads of %d: %w", pid, err)
	}
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("setting the CPUs of thread %d of %d: %w", tid, pid, err)
		}
	}
	return nil
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields := statFields(child)
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out, nil
}

// statFields is /proc/pid/stat after "pid (comm) ", split at spaces: the
// stat's third field (the state) first, the fourth (the parent's pid)
// next; nil when pid is gone. comm may hold spaces and parentheses, so the
// split starts after its last parenthesis.
func statFields(pid int) []string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
}

// comm is the command name of pid.
func comm(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if err != nil {
		return strconv.Itoa(pid)
	}
	return strings.TrimSpace(string(b))
}

// controlPlaneCPU is the user and system CPU the API server and etcd (this
// process's children of those names) have used so far; 0 where /proc
// cannot tell.
func controlPlaneCPU() time.Duration {
	children, err := childrenOf(os.Getpid())
	if err != nil {
		return 0
	}
	var ticks int64
	for _, pid := range children {
		if c := comm(pid); c != "kube-apiserver" && c != "etcd" {
			continue
		}
		fields := statFields(pid) // utime and stime are the stat's fields 14 and 15
		if len(fields) < 13 {
			continue
		}
		for _, f := range fields[11:13] {
			n, _ := strconv.ParseInt(f, 10, 64)
			ticks += n
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// clockTicks is the kernel's USER_HZ, the unit of /proc's CPU times (100
// on every Linux the bench runs on).
const clockTicks = 100

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestModuleRoot(t *testing.T) {
	for name, tc := range map[string]struct {
		reason  string
		gomod   string
		want    string
		wantErr bool
	}{
		"Module":        {reason: "the directory of the go.mod, the trailing newline of go env ignored", gomod: "/work/main/go.mod\n", want: "/work/main"},
		"NoModule":      {reason: "outside a module go env GOMOD prints an empty line: nothing to build from", gomod: "\n", wantErr: true},
		"ModulesOff":    {reason: "with GO111MODULE=off, or a go.mod-less directory under it, go env GOMOD prints the null device", gomod: os.DevNull + "\n", wantErr: true},
		"Relative":      {reason: "a relative path would resolve against the wrong directory", gomod: "go.mod", wantErr: true},
		"NotAGoModFile": {reason: "anything but a go.mod is not a module root", gomod: "/work/main/go.work", wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := moduleRoot(tc.gomod)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nmoduleRoot(%q): error %v, want an error: %v", tc.reason, tc.gomod, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nmoduleRoot(%q): -want +got:\n%s", tc.reason, tc.gomod, diff)
			}
		})
	}
}

// status is a /proc/<pid>/status text around the lines given.
func status(lines ...string) string {
	return strings.Join(append(append([]string{"Name:\tmanager", "VmPeak:\t 1600000 kB"}, lines...), "Threads:\t12", ""), "\n")
}

func TestParseProcMem(t *testing.T) {
	for name, tc := range map[string]struct {
		reason  string
		text    string
		want    procMem
		wantErr bool
	}{
		"Both":         {reason: "VmRSS and VmHWM in kB, in bytes; VmPeak (virtual) is not the peak RSS", text: status("VmHWM:\t   81920 kB", "VmRSS:\t   40960 kB"), want: procMem{rss: 40 << 20, peak: 80 << 20}},
		"NoPeak":       {reason: "a process without VmHWM must not read as peaking at 0", text: status("VmRSS:\t   40960 kB"), wantErr: true},
		"NoRSS":        {reason: "a kernel thread, or an exited process, has no VmRSS", text: status("VmHWM:\t   81920 kB"), wantErr: true},
		"Empty":        {reason: "an empty read is no measure", text: "", wantErr: true},
		"NotKB":        {reason: "a unit other than kB would be off by a factor", text: status("VmHWM:\t   80 MB", "VmRSS:\t   40960 kB"), wantErr: true},
		"NotANumber":   {reason: "a malformed size fails instead of reading 0", text: status("VmHWM:\t   8x kB", "VmRSS:\t   40960 kB"), wantErr: true},
		"MissingValue": {reason: "a field with no size fails", text: status("VmHWM:", "VmRSS:\t   40960 kB"), wantErr: true},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := parseProcMem(strings.NewReader(tc.text))
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nparseProcMem: error %v, want an error: %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(procMem{})); diff != "" {
				t.Errorf("%s\nparseProcMem: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReadProcMem(t *testing.T) {
	self, err := readProcMem(os.Getpid())
	if _, statErr := os.Stat(filepath.Join("/proc", strconv.Itoa(os.Getpid()), "status")); statErr != nil {
		t.Skip("no /proc here")
	}
	if err != nil {
		t.Fatalf("readProcMem(this process): %v", err)
	}
	if self.rss == 0 || self.peak < self.rss {
		t.Errorf("readProcMem(this process) = %+v: want an RSS above 0 and a peak at least the RSS", self)
	}
	if _, err := readProcMem(-1); err == nil {
		t.Errorf("readProcMem(-1): want an error for a process that does not exist")
	}
}

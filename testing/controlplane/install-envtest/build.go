package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// tailLines is how much of a failed build's log is printed.
const tailLines = 40

// build is one component being built: its throwaway module directory and the
// log that receives the go tool's output.
type build struct {
	in      *installer
	name    string
	version string
	dir     string
	log     io.Writer
}

// component builds one binary with fn in <workDir>/<name>-<version>, sending
// the go tool's output to build.log there; when fn fails it prints the log's
// tail.
func (in *installer) component(ctx context.Context, name, version string, fn func(context.Context, *build) error) error {
	dir := filepath.Join(in.workDir, name+"-"+version)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(dir, "build.log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // written unbuffered: nothing is lost on close
	b := &build{in: in, name: name, version: version, dir: dir, log: f}
	if err := fn(ctx, b); err != nil {
		b.phase("failed; last lines of " + logPath + ":")
		printTail(in.progress, logPath, tailLines)
		return fmt.Errorf("building %s %s (log: %s): %w", name, version, logPath, err)
	}
	b.phase("ready")
	return nil
}

// phase prints one progress line with the seconds elapsed since the start.
func (b *build) phase(what string) {
	b.in.printf("envtest: %s %s: %s (%ds)", b.name, b.version, what, int(time.Since(b.in.start).Seconds()))
}

// initModule creates the throwaway module unless an earlier run did.
func (b *build) initModule(ctx context.Context, path string) error {
	if _, err := os.Stat(filepath.Join(b.dir, "go.mod")); err == nil {
		return nil
	}
	return b.goCmd(ctx, "mod", "init", path)
}

// compile builds pkg into out, through a temporary name so that an
// interrupted build never leaves a half-written binary behind.
func (b *build) compile(ctx context.Context, out, ldflags, pkg string) error {
	tmp := out + ".tmp"
	args := []string{"build", "-trimpath"}
	if ldflags != "" {
		args = append(args, "-ldflags", ldflags)
	}
	if err := b.goCmd(ctx, append(args, "-o", tmp, pkg)...); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}

// goCmd runs the go tool in the module directory, its output to the log.
func (b *build) goCmd(ctx context.Context, args ...string) error {
	return b.goTool(ctx, b.log, args...)
}

// goJSON runs the go tool and decodes its standard output into v.
func (b *build) goJSON(ctx context.Context, v any, args ...string) error {
	var out bytes.Buffer
	if err := b.goTool(ctx, &out, args...); err != nil {
		return err
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("go %s: decoding its output: %w", strings.Join(args, " "), err)
	}
	return nil
}

func (b *build) goTool(ctx context.Context, stdout io.Writer, args ...string) error {
	_, _ = fmt.Fprintf(b.log, "$ go %s\n", strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = b.dir
	cmd.Env = goEnv(os.Environ())
	cmd.Stdout = stdout
	cmd.Stderr = b.log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// goEnv is the caller's environment with the throwaway module made
// independent of it: no workspace, and no -mod flag (the module's go.mod is
// ours to edit, whatever the caller's own module wants).
func goEnv(env []string) []string {
	var flags []string
	for _, kv := range env {
		v, ok := strings.CutPrefix(kv, "GOFLAGS=")
		if !ok {
			continue
		}
		flags = flags[:0]
		for _, f := range strings.Fields(v) {
			if !strings.HasPrefix(f, "-mod=") {
				flags = append(flags, f)
			}
		}
	}
	out := append([]string(nil), env...)
	return append(out, "GOWORK=off", "GOFLAGS="+strings.Join(flags, " "))
}

// printTail copies the last n lines of the file at path to w.
func printTail(w io.Writer, path string, n int) {
	f, err := os.Open(path)
	if err != nil {
		_, _ = fmt.Fprintf(w, "  (cannot read %s: %v)\n", path, err)
		return
	}
	defer func() { _ = f.Close() }()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	for _, l := range lines {
		_, _ = fmt.Fprintf(w, "  %s\n", l)
	}
}

package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// dieWithParent makes etcd and kube-apiserver die with the process that
// started them, however it ends: a test binary killed mid-run (go test |
// head, a CI time-out, kill -9) otherwise leaves both running without a
// parent, holding ports and memory (one run left them for 12 minutes).
// envtest starts them itself and sets no parent-death signal, so each is
// started through a two-line wrapper in dir that runs it under util-linux's
// setpriv --pdeathsig KILL: the kernel kills the binary when its parent
// dies. The wrapper execs, so the binary keeps the wrapper's pid and envtest
// stops it as before. On a system other than Linux, or without a setpriv
// that takes --pdeathsig, it changes nothing and says why in the returned
// note.
func dieWithParent(env *envtest.Environment, assets, dir string) (note string) {
	if runtime.GOOS != "linux" {
		return "not on Linux"
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		return "no setpriv on PATH (util-linux)"
	}
	if err := exec.Command(setpriv, "--pdeathsig", "KILL", "--", "true").Run(); err != nil {
		return fmt.Sprintf("%s --pdeathsig: %v", setpriv, err)
	}
	wrap := func(name string) (string, error) {
		path := filepath.Join(dir, name)
		script := "#!/bin/sh\nexec " + shellQuote(setpriv) + " --pdeathsig KILL -- " +
			shellQuote(filepath.Join(assets, name)) + " \"$@\"\n"
		return path, os.WriteFile(path, []byte(script), 0o755)
	}
	apiServer, err := wrap("kube-apiserver")
	if err != nil {
		return err.Error()
	}
	etcd, err := wrap("etcd")
	if err != nil {
		return err.Error()
	}
	env.ControlPlane.GetAPIServer().Path = apiServer
	if env.ControlPlane.Etcd == nil {
		env.ControlPlane.Etcd = &envtest.Etcd{}
	}
	env.ControlPlane.Etcd.Path = etcd
	return ""
}

// shellQuote quotes s for sh: between single quotes, each single quote
// closed, escaped and opened again.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

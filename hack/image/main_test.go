package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestReproducible packs one binary twice, at different wall-clock times,
// and expects one digest and byte-identical tarballs.
func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "manager")
	if err := os.WriteFile(bin, []byte("\x7fELF not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	var outs [2]string
	var tars [2][]byte
	for i := range outs {
		tarPath := filepath.Join(dir, "image"+string(rune('a'+i))+".tar")
		var stdout bytes.Buffer
		if err := run([]string{"-binary", bin, "-out", tarPath, "-tag", "sliceclass-manager:dev"}, &stdout); err != nil {
			t.Fatal(err)
		}
		outs[i] = stdout.String()
		var err error
		if tars[i], err = os.ReadFile(tarPath); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1100 * time.Millisecond) // a timestamp that leaked in would differ
	}
	if outs[0] != outs[1] {
		t.Fatalf("two builds, two results:\n%s%s", outs[0], outs[1])
	}
	if !strings.HasPrefix(outs[0], "sliceclass-manager:dev sha256:") {
		t.Errorf("want the reference and the digest, got %q", outs[0])
	}
	if !bytes.Equal(tars[0], tars[1]) {
		t.Error("the tarballs differ")
	}
}

// TestImageContent checks what the image runs and holds: the binary as its
// entrypoint, as the numeric non-root user, and a layer of sorted entries
// owned by root with fixed times, with no shell.
func TestImageContent(t *testing.T) {
	epoch := time.Unix(1700000000, 0).UTC()
	img, err := build([]byte("binary"), "arm64", epoch)
	if err != nil {
		t.Fatal(err)
	}
	// Through the tarball, as a loader reads it.
	path := filepath.Join(t.TempDir(), "image.tar")
	tag, _ := name.NewTag("sliceclass-manager:dev")
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		t.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := loaded.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Config.User != "65532:65532" || !slices.Equal(cfg.Config.Entrypoint, []string{"/manager"}) || cfg.Architecture != "arm64" || cfg.OS != "linux" {
		t.Errorf("config: user %q entrypoint %q platform %s/%s", cfg.Config.User, cfg.Config.Entrypoint, cfg.OS, cfg.Architecture)
	}
	if !cfg.Created.Equal(epoch) {
		t.Errorf("created %s, want %s", cfg.Created, epoch)
	}
	layers, err := loaded.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("want one layer, got %d (%v)", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	tr := tar.NewReader(rc)
	var names []string
	files := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: uid %d gid %d mtime %s", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = string(data)
	}
	if !slices.IsSorted(names) {
		t.Errorf("entries not sorted: %v", names)
	}
	if files["manager"] != "binary" {
		t.Errorf("/manager holds %q", files["manager"])
	}
	if !strings.Contains(files["etc/passwd"], "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the nonroot user:\n%s", files["etc/passwd"])
	}
	for _, n := range names {
		if strings.Contains(n, "sh") && strings.Contains(n, "bin/") {
			t.Errorf("a shell in the image: %s", n)
		}
	}
}

// TestBuildFromAModule builds a main package of a module of its own (as a
// user's would be) twice, from two copies of the module in different
// directories, and expects one digest: the build is reproducible, not
// tied to where the source lies. -binary keeps the built binary.
func TestBuildFromAModule(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	var outs [2]string
	for i := range outs {
		mod := filepath.Join(t.TempDir(), "mod"+string(rune('a'+i)))
		if err := os.MkdirAll(filepath.Join(mod, "cmd", "manager"), 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{
			"go.mod":              "module example.com/mine\n\ngo 1.22\n",
			"cmd/manager/main.go": "package main\n\nfunc main() { println(\"mine\") }\n",
		}
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(mod, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		kept := filepath.Join(mod, "bin", "manager")
		var stdout bytes.Buffer
		err := run([]string{"-build", "./cmd/manager", "-dir", mod, "-binary", kept,
			"-out", filepath.Join(mod, "image.tar"), "-tag", "mine:v1"}, &stdout)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("-binary: the built binary is not kept: %v", err)
		}
		outs[i] = stdout.String()
	}
	if outs[0] != outs[1] {
		t.Fatalf("one source, two images:\n%s%s", outs[0], outs[1])
	}
	if !strings.HasPrefix(outs[0], "mine:v1 sha256:") {
		t.Errorf("want the reference and the digest, got %q", outs[0])
	}

	err := run([]string{"-build", "./nope", "-dir", t.TempDir(), "-out", filepath.Join(t.TempDir(), "x.tar")}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "go build ./nope") {
		t.Errorf("a failing build names the package, got %v", err)
	}
}

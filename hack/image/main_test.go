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

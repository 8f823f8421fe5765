// Command image packs a manager's binary into an OCI image, without a
// container daemon and without any network: one layer holding the binary
// and an /etc/passwd naming its non-root user, on an empty base, with every
// timestamp fixed. The same binary gives the same image digest, wherever
// and whenever it is packed.
//
//	image -binary bin/image/manager -tag sliceclass-manager:dev -out bin/sliceclass-manager.tar
//
// With -build it first builds the binary itself, from a main package of the
// module in -dir (default: the working directory), as `make image` builds
// the example manager: static (CGO_ENABLED=0), for linux/-arch, with
// -trimpath, -buildvcs=false and -ldflags "-s -w -buildid=", so that one
// source tree gives one digest. From your own module's root, your manager
// in one line:
//
//	go run github.com/sliceclass/sliceclass/hack/image@latest -build ./cmd/manager -tag my-manager:v1 -out my-manager.tar
//
// (-binary then names where the built binary is kept; by default it is
// not.) The tarball loads with `docker load`, `podman load` or `kind load
// image-archive`; the command prints the image reference and its digest.
// SOURCE_DATE_EPOCH, when set, is the timestamp of the image and its files
// (default: 0, the Unix epoch).
//
// It is a module of its own (hack/image/go.mod), so that
// go-containerregistry stays out of the SDK's go.mod, and so that `go run
// ...@version` works from any module.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: the conventional "nonroot" of distroless images, by
// number, so that Kubernetes can check runAsNonRoot without reading
// /etc/passwd.
const (
	uid     = 65532
	user    = "65532:65532"
	binPath = "manager"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

// run parses args, builds the image and writes the tarball.
func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	binary := fs.String("binary", "", "the static manager binary to pack (required without -build); with -build, where to keep the built binary")
	pkg := fs.String("build", "", "build this main package (e.g. ./cmd/manager) of the module in -dir first, reproducibly, and pack it")
	dir := fs.String("dir", ".", "with -build: the directory of the module to build in")
	tag := fs.String("tag", "sliceclass-manager:dev", "the image's reference, written into the tarball")
	out := fs.String("out", "", "the tarball to write (required)")
	arch := fs.String("arch", "amd64", "the binary's GOARCH")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (*binary == "" && *pkg == "") || *out == "" {
		return errors.New("-out, and -binary or -build, are required")
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return fmt.Errorf("-tag: %w", err)
	}
	epoch, err := sourceDate()
	if err != nil {
		return err
	}
	if *pkg != "" {
		built, err := buildBinary(*dir, *pkg, *arch, *binary)
		if err != nil {
			return err
		}
		*binary = built
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	img, err := build(bin, *arch, epoch)
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(*out, ref, img); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s %s\n", ref.String(), digest)
	return err
}

// buildBinary builds the main package pkg of the module in dir for
// linux/arch, static and reproducible, into keep (a temporary file when
// keep is ""), and returns the binary's path.
func buildBinary(dir, pkg, arch, keep string) (string, error) {
	out := keep
	if out == "" {
		tmp, err := os.MkdirTemp("", "sliceclass-image-")
		if err != nil {
			return "", err
		}
		out = filepath.Join(tmp, "manager")
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", "-s -w -buildid=", "-o", abs, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %w\n%s", pkg, dir, err, msg)
	}
	return abs, nil
}

// sourceDate is SOURCE_DATE_EPOCH, or the Unix epoch.
func sourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	sec, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH: %w", err)
	}
	return time.Unix(sec, 0).UTC(), nil
}

// build returns the image: an empty base, one layer, a config that runs the
// binary as the non-root user, every timestamp at epoch, OCI media types.
func build(bin []byte, arch string, epoch time.Time) (v1.Image, error) {
	layerTar, err := rootfs(bin, epoch)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: epoch}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{Created: created, CreatedBy: "sliceclass hack/image"},
	})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture = arch
	cfg.OS = "linux"
	cfg.Created = created
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + binPath},
		User:       user,
		WorkingDir: "/",
		Env:        []string{"PATH=/"},
	}
	return mutate.ConfigFile(img, cfg)
}

// rootfs is the layer: a tar whose entries are sorted by name and carry
// fixed modes, owners and times, so that the same binary gives the same
// bytes.
func rootfs(bin []byte, epoch time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/:/sbin/nologin\n", uid, uid)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", uid)
	type entry struct {
		name string
		mode int64
		data []byte
		dir  bool
	}
	entries := []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: binPath, mode: 0o755, data: bin},
	}
	slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.name, b.name) })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Size: int64(len(e.data)), ModTime: epoch,
			Typeflag: tar.TypeReg, Format: tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

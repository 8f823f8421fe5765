package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a module of its own: shapes holds one of each kind of
// exported name and names left out (unexported, DeepCopy*, a method of an
// unexported type, a _test.go file, a windows-only file, a file behind a
// tag); the root package only holds docs; internal/hidden and the main
// package cmd/tool are left out.
const fixture = "testdata/fixture"

// fixtureLines are the lines apitxt gives for the fixture, in order.
var fixtureLines = []string{
	"pkg example.com/fixture/shapes, const Circle Kind = 0",
	`pkg example.com/fixture/shapes, const Name = "shapes"`,
	"pkg example.com/fixture/shapes, const Square Kind = 1",
	"pkg example.com/fixture/shapes, func Linux()",
	"pkg example.com/fixture/shapes, func Map[T any]([]T, func(T) T) []T",
	"pkg example.com/fixture/shapes, func New(int, ...Option) (*Shape, error)",
	"pkg example.com/fixture/shapes, method (*Pair[K, V]) Key() K",
	"pkg example.com/fixture/shapes, method (*Shape) Grow(int, int, io.Writer) (int, error)",
	"pkg example.com/fixture/shapes, method (Shape) Area() int",
	"pkg example.com/fixture/shapes, type Drawer interface { io.Closer; Bounds() (int, int); Draw(io.Writer, float64) error }",
	"pkg example.com/fixture/shapes, type Kind int",
	"pkg example.com/fixture/shapes, type Option func(*Shape)",
	"pkg example.com/fixture/shapes, type Pair[K comparable, V any] struct",
	"pkg example.com/fixture/shapes, type Shape struct",
	"pkg example.com/fixture/shapes, var Default Shape",
	"pkg example.com/fixture/shapes, var ErrNoShape error",
	"pkg example.com/fixture/shapes, var Limit int",
}

func TestFixtureLines(t *testing.T) {
	got, err := moduleLines(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "\n") != strings.Join(fixtureLines, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(fixtureLines, "\n"))
	}
}

func TestStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, fixture, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if want := strings.Join(fixtureLines, "\n") + "\n"; stdout.String() != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout.String(), want)
	}
}

// TestCheckReportsDrift writes api.txt for a copy of the fixture, checks it,
// then changes the exported surface: -check fails with the lines added (+)
// and removed (-) and says how to regenerate.
func TestCheckReportsDrift(t *testing.T) {
	root := copyFixture(t)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"-check"}, root, &stdout, &stderr); code != 1 {
		t.Errorf("-check with no api.txt: exit %d, want 1", code)
	}
	stderr.Reset()
	if code := run([]string{"-w"}, root, &stdout, &stderr); code != 0 {
		t.Fatalf("-w: exit %d: %s", code, stderr.String())
	}
	written, err := os.ReadFile(filepath.Join(root, "hack", "api.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		generatedLine + "\n",
		fixtureLines[0] + "\n",
		"\n# count example.com/fixture/shapes 17\n# count total 17\n",
	} {
		if !strings.Contains(string(written), want) {
			t.Errorf("api.txt lacks %q:\n%s", want, written)
		}
	}
	if !strings.HasPrefix(string(written), generatedLine+"\n") {
		t.Errorf("api.txt does not start with %q", generatedLine)
	}
	if code := run([]string{"-check"}, root, &stdout, &stderr); code != 0 {
		t.Fatalf("-check right after -w: exit %d: %s", code, stderr.String())
	}

	// Add two functions, drop one and change a signature.
	src := filepath.Join(root, "shapes", "shapes.go")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(data), "func helper() {}", "// Added is new.\nfunc Added() int { return 0 }\n\n// Added2 is new.\nfunc Added2() {}", 1)
	changed = strings.Replace(changed, "func (s Shape) Area() int", "func (s Shape) Area(scale int) int", 1)
	if changed == string(data) {
		t.Fatal("fixture edit did not apply")
	}
	if err := os.WriteFile(src, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "shapes", "linux.go")); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := run([]string{"-check"}, root, &stdout, &stderr); code != 1 {
		t.Fatalf("-check after a change: exit %d, want 1: %s", code, stderr.String())
	}
	for _, want := range []string{
		"\n+pkg example.com/fixture/shapes, func Added() int\n",
		"\n-pkg example.com/fixture/shapes, func Linux()\n",
		"\n-pkg example.com/fixture/shapes, method (Shape) Area() int\n",
		"\n+pkg example.com/fixture/shapes, method (Shape) Area(int) int\n",
		"\n-# count example.com/fixture/shapes 17\n",
		"\n+# count example.com/fixture/shapes 18\n",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("-check output lacks %q:\n%s", want, stderr.String())
		}
	}
	if !strings.HasSuffix(stderr.String(), staleMessage+"\n") {
		t.Errorf("-check output does not end with %q:\n%s", staleMessage, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("-w and -check wrote to stdout: %q", stdout.String())
	}
}

// copyFixture copies the fixture module into a temporary directory.
func copyFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	err := filepath.WalkDir(fixture, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(fixture, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(root, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "hack"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

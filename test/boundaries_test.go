package test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// unsafeOwners are the only packages allowed to import "unsafe" or "C"
// (docs/ARCHITECTURE.md §1): pointer arithmetic over mappings lives in one
// place, and cgo only in the packages that bind a C library.
var unsafeOwners = map[string]bool{
	"internal/shm":            true,
	"internal/cuda":           true,
	"cmd/librgaps":            true, // a c-shared library exports through import "C"
	"bridge/transport/fabric": true, // binds libfabric: contexts and buffers in C memory
	"rmw":                     true, // librmw_rgaps: the rmw C ABI over the engine
	"internal/iceoryx":        true, // binds iceoryx (dlopen): chunks in shared memory
	// the C and C++ introspection walkers the rmw links (no Go API)
	"typesupport/introspection": true,
}

func TestUnsafeOnlyInShm(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "build") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if (p == "unsafe" || p == "C") && !unsafeOwners[filepath.ToSlash(rel)] {
				t.Errorf("%s imports %q; only %v may", path, p, unsafeOwners)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked only %d files: wrong root?", checked)
	}
}

// TestTypeSupportImports keeps type support apart from the engine
// (docs/ARCHITECTURE.md §1): the packages under typesupport/ import the
// standard library and each other, never shared memory, the network, the
// engine, the bridge or the rmw.
func TestTypeSupportImports(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/rmw-rgaps/rmw_rgaps/"
	forbidden := []string{"net", "syscall", "golang.org/x/sys/", "os/signal"}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(filepath.Join(root, "typesupport"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, module) {
				if !strings.HasPrefix(p, module+"typesupport/") {
					t.Errorf("%s imports %s: type support imports only type support from this module", path, p)
				}
				continue
			}
			for _, f := range forbidden {
				if p == strings.TrimSuffix(f, "/") || strings.HasPrefix(p, strings.TrimSuffix(f, "/")+"/") {
					t.Errorf("%s imports %s: type support knows no shared memory or network", path, p)
				}
			}
			if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") && !strings.HasPrefix(p, module) {
				t.Errorf("%s imports %s: type support has no third-party dependency", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 10 {
		t.Fatalf("checked only %d files: wrong root?", checked)
	}
}

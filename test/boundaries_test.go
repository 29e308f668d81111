package test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	"bench/iceoryx":           true, // binds iceoryx (dlopen): chunks in shared memory
	"dds":                     true, // binds Cyclone DDS (dlopen): the raw sertype in C
	// the C and C++ introspection walkers the rmw links (no Go API)
	"typesupport/introspection": true,
}

func TestUnsafeOnlyInShm(t *testing.T) {
	for _, f := range parseTree(t) {
		for _, p := range f.other {
			if (p == "unsafe" || p == "C") && !unsafeOwners[f.dir] {
				t.Errorf("%s imports %q; only %v may", f.path, p, unsafeOwners)
			}
		}
	}
}

const module = "github.com/rmw-rgaps/rmw_rgaps"

// goFile is one parsed Go file: its package directory relative to the
// repository root ("" for the root package) and its imports, the
// project's relative to the module ("" for the root package) and the
// standard library's and others' as they are.
type goFile struct {
	path, dir string
	test      bool
	project   []string // project packages, module-relative
	other     []string // everything else
}

// parseTree parses the imports of every Go file of the repository.
func parseTree(t *testing.T) []goFile {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []goFile
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "build" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		g := goFile{path: path, dir: rel, test: strings.HasSuffix(path, "_test.go")}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			switch {
			case p == module:
				g.project = append(g.project, "")
			case strings.HasPrefix(p, module+"/"):
				g.project = append(g.project, strings.TrimPrefix(p, module+"/"))
			default:
				g.other = append(g.other, p)
			}
		}
		files = append(files, g)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("parsed only %d files: wrong root?", len(files))
	}
	return files
}

// importPath is the import path of the module-relative package p.
func importPath(p string) string {
	if p == "" {
		return module
	}
	return module + "/" + p
}

// under reports whether package p is pattern or, for "x/...", x or below
// it. "" is the root package only.
func under(p, pattern string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

func underAny(p string, patterns []string) bool {
	for _, pat := range patterns {
		if under(p, pat) {
			return true
		}
	}
	return false
}

// layerRule forbids the packages matching from to import what matches
// deny (project packages, module-relative) or denyStd (other import
// paths). withTests extends the project rule to test files; denyStd
// always concerns the package's own code only.
type layerRule struct {
	from      string
	deny      []string
	denyStd   []string
	withTests bool
	why       string
}

// frontEnds are the programs and APIs on top of the engine: the Go API
// (root package), the rmw library, the C API, the CLI.
var frontEnds = []string{"", "rmw/...", "cmd/..."}

var layerRules = []layerRule{
	{from: "zerocopy/...", deny: []string{"bridge/...", "rmw/...", "cmd/...", "typesupport/...", "bench/...", "rgapsd", ""},
		denyStd: []string{"net", "net/...", "flag", "os/signal"}, withTests: true,
		why: "the engine knows no network, no ROS ABI, no type support and no command line"},
	{from: "typesupport/...", deny: []string{"zerocopy/...", "internal/shm", "bridge/...", "rmw/...", "cmd/...", "bench/...", "rgapsd", ""},
		denyStd: []string{"net", "net/..."}, withTests: true,
		why: "type support is codecs and schemas over bytes: no shared memory, no network"},
	{from: "bridge/...", deny: append([]string{"typesupport/...", "bench/...", "rgapsd"}, frontEnds...), withTests: false,
		why: "the bridge forwards bytes for every front end alike and is run by rgapsd, not the other way round"},
	{from: "bridge/...", deny: append([]string{"typesupport/...", "bench/..."}, frontEnds...), withTests: true,
		why: "the bridge's tests drive it through the engine, not through a front end"},
	{from: "bridge/...", deny: []string{"internal/cuda"}, withTests: true,
		why: "the engine owns CUDA: the bridge moves device data through zerocopy.Copier and runs no streams or events of its own"},
	{from: "cabi", deny: []string{"bridge/...", "rmw/...", "cmd/...", "typesupport/...", "bench/...", "rgapsd", ""},
		denyStd: []string{"net", "net/...", "flag", "os/signal"}, withTests: true,
		why: "the C-ABI layer knows the engine's errors and nothing above them: no front end, no bridge, no network"},
	{from: "dds", deny: []string{"zerocopy", "zerocopy/tlsf", "zerocopy/gpupool", "internal/shm", "internal/cuda", "bridge/...", "typesupport/...", "bench/...", "rgapsd", "cabi", "", "rmw/...", "cmd/..."},
		withTests: true,
		why:       "the DDS binding carries opaque bytes: it knows ROS names and QoS (zerocopy/qos), not the engine, type support or any front end"},
	{from: "gateway", deny: []string{"bridge/...", "cabi", "internal/shm", "internal/cuda", "bench/...", "rgapsd", "", "rmw/...", "cmd/..."},
		withTests: true,
		why:       "the DDS gateway carries topics between the engine and dds for every front end alike, beside the bridge, not through it"},
	{from: "rgapsd", deny: []string{"rmw/...", "cmd/...", "bench/...", "typesupport/...", ""}, withTests: true,
		why: "the daemon serves every front end alike"},
}

// importRule says who may import the packages matching what; a test file
// may also when tests is set.
type importRule struct {
	what  string
	by    []string
	tests bool
	why   string
}

var importRules = []importRule{
	{what: "bench/...", by: []string{"bench/...", "cmd/rgaps-bench"},
		why: "nothing but the bench binary imports the benchmarks: the daemon and the rmw library link none of them"},
	{what: "cmd/...", by: nil, why: "commands are not libraries"},
	{what: "cabi", by: []string{"rmw", "cmd/librgaps"},
		why: "the C-ABI layer is shared by the two C libraries, and only by them"},
	{what: "rgapsd", by: []string{"cmd/rgaps", "cmd/rgaps-bench"}, tests: true,
		why: "rgapsd is the daemon's main: run by the commands, and by test binaries serving as the daemon"},
	{what: "internal/testutil", by: []string{"bench/util/benchtest"}, tests: true,
		why: "test helpers are imported by tests (and test-helper packages) only"},
	{what: "bench/util/benchtest", by: nil, tests: true, why: "test helpers are imported by tests only"},
	{what: "dds", by: []string{"bridge/...", "rgapsd", "cmd/rgaps", "gateway", "bench/dds"}, tests: true,
		why: "Cyclone DDS is for the daemon's DDS gateway (its CLI and its benchmark): the engine, the rmw and the C API never load it"},
	{what: "gateway", by: []string{"rgapsd", "bench/dds"}, tests: true,
		why: "the DDS gateway is part of the daemon (and measured by its benchmark): run by rgapsd, never linked by the engine, the rmw or the C API"},
}

// stdOwners are the only packages whose own code may import these: a
// library does not catch signals or parse a command line for its caller.
var stdOwners = map[string][]string{
	"os/signal": {"cmd/...", "bench/...", "internal/testutil"},
	"flag":      {"cmd/...", "bench/...", "rgapsd", "bridge"},
}

// TestImportRules fails when a package reaches a layer it must not
// (docs/ARCHITECTURE.md §1).
func TestImportRules(t *testing.T) {
	files := parseTree(t)
	for _, f := range files {
		// internal/ holds foundations: they import nothing of the project
		// above them.
		if under(f.dir, "internal/...") {
			for _, p := range f.project {
				if !under(p, "internal/...") {
					t.Errorf("%s imports %q: internal/ holds foundations, which import nothing of the project outside internal/", f.path, importPath(p))
				}
			}
		}
		for _, r := range layerRules {
			if !under(f.dir, r.from) || (f.test && !r.withTests) {
				continue
			}
			for _, p := range f.project {
				if underAny(p, r.deny) {
					t.Errorf("%s imports %q: %s", f.path, importPath(p), r.why)
				}
			}
			if f.test {
				continue
			}
			for _, p := range f.other {
				if underAny(p, r.denyStd) {
					t.Errorf("%s imports %q: %s", f.path, p, r.why)
				}
			}
		}
		for _, r := range importRules {
			for _, p := range f.project {
				if under(p, r.what) && !underAny(f.dir, r.by) && !(f.test && r.tests) && !under(f.dir, r.what) {
					t.Errorf("%s imports %q: %s", f.path, importPath(p), r.why)
				}
			}
		}
		if !f.test {
			for _, p := range f.other {
				if owners, ok := stdOwners[p]; ok && !underAny(f.dir, owners) {
					t.Errorf("%s imports %q: only %v may (libraries leave signals and flags to their command)", f.path, p, owners)
				}
			}
		}
	}
}

// linkedNever are import paths the daemon binary, the rmw library and the
// C API must not link: plotting, fonts, the Iceoryx loader, benchmarks.
var linkedNever = []string{"gonum.org/", "golang.org/x/image/", "plot", "font", "iceoryx", module + "/bench/"}

func checkDeps(t *testing.T, what string, deps []string) {
	t.Helper()
	for _, d := range deps {
		for _, bad := range linkedNever {
			if strings.Contains(d, bad) {
				t.Errorf("%s links %s: the daemon, the rmw library and the C API must link no plotting, font, Iceoryx or benchmark package (they belong to cmd/rgaps-bench)", what, d)
				break
			}
		}
	}
}

// The daemon binary (`rgaps`, which CMake installs and the engine
// auto-starts), the rmw library and the C API link none of the benchmarks'
// dependencies. Checked twice: on the project's own import graph (walked
// from the parsed files, tests left out), and on the full dependency list
// of the go command, which also sees what third-party packages pull in.
func TestDaemonDeps(t *testing.T) {
	files := parseTree(t)
	imports := map[string][]string{} // package dir → imports of its non-test files
	for _, f := range files {
		if f.test {
			continue
		}
		for _, p := range f.project {
			imports[f.dir] = append(imports[f.dir], importPath(p))
		}
		imports[f.dir] = append(imports[f.dir], f.other...)
	}
	roots := []string{"cmd/rgaps", "rmw", "cmd/librgaps"}
	for _, root := range roots {
		seen := map[string]bool{}
		var deps []string
		var walk func(dir string)
		walk = func(dir string) {
			for _, p := range imports[dir] {
				if seen[p] {
					continue
				}
				seen[p] = true
				deps = append(deps, p)
				if rel, ok := strings.CutPrefix(p, module+"/"); ok {
					walk(rel)
				} else if p == module {
					walk("")
				}
			}
		}
		walk(root)
		if len(deps) < 10 {
			t.Fatalf("%s: only %d imports found: wrong root?", root, len(deps))
		}
		checkDeps(t, root+" (import graph)", deps)
	}

	goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goCmd); err != nil {
		if goCmd, err = exec.LookPath("go"); err != nil {
			t.Log("no go command: the full dependency list was not checked, only the project's import graph")
			return
		}
	}
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	for _, r := range roots {
		args = append(args, "./"+r)
	}
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list -deps gave only %d packages", len(deps))
	}
	checkDeps(t, strings.Join(roots, ", "), deps)
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

// TestRootHasNoEngineAliases: package zerocopy is the public engine API
// (docs/ARCHITECTURE.md §1), so the root package rgaps, the ROS layer,
// re-exports none of its types under other names: one name per concept.
func TestRootHasNoEngineAliases(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "*.go"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no Go files in the root package (%v)", err)
	}
	fset := token.NewFileSet()
	for _, path := range paths {
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if ts.Assign.IsValid() {
					t.Errorf("%s: type %s is an alias (%s): use the engine's type itself", fset.Position(ts.Pos()), ts.Name.Name, exprString(ts.Type))
				}
			}
		}
	}
}

// TestEngineAPIHasNoInternalTypes: zerocopy's exported API (its exported
// functions, methods, types, fields, variables and constants) names no
// type of an internal package, which callers outside the module could not
// use: the engine's public surface is its own.
func TestEngineAPIHasNoInternalTypes(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "zerocopy", "*.go"))
	if err != nil || len(paths) < 10 {
		t.Fatalf("zerocopy's files not found (%d, %v)", len(paths), err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{} // local names of imported internal packages
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(p, "/internal/") {
				continue
			}
			name := p[strings.LastIndexByte(p, '/')+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			internal[name] = true
		}
		// bad reports the internal identifiers an exported declaration's
		// type expression names.
		bad := func(where string, n ast.Node) {
			if n == nil {
				return
			}
			checked++
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
						t.Errorf("%s: %s names %s.%s, a type of an internal package", fset.Position(sel.Pos()), where, id.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil && !exportedRecv(d.Recv) {
					continue
				}
				bad("func "+d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						exportedParts(s.Type, func(n ast.Node) { bad("type "+s.Name.Name, n) })
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() { // its type: a value (a sentinel) may be internal
								bad(id.Name, s.Type)
							}
						}
					}
				}
			}
		}
	}
	if checked < 100 {
		t.Fatalf("checked only %d exported declarations: wrong files?", checked)
	}
}

// exportedRecv says whether a method's receiver type is exported.
func exportedRecv(fl *ast.FieldList) bool {
	if fl == nil || len(fl.List) == 0 {
		return false
	}
	x := fl.List[0].Type
	if s, ok := x.(*ast.StarExpr); ok {
		x = s.X
	}
	if ix, ok := x.(*ast.IndexExpr); ok {
		x = ix.X
	}
	id, ok := x.(*ast.Ident)
	return ok && id.IsExported()
}

// exportedParts calls fn with the parts of a type definition that are
// visible outside the package: the exported fields of a struct, the
// methods of an interface, or the whole type otherwise.
func exportedParts(x ast.Expr, fn func(ast.Node)) {
	switch x := x.(type) {
	case *ast.StructType:
		for _, fld := range x.Fields.List {
			if len(fld.Names) == 0 { // embedded: its exported members show
				fn(fld.Type)
			}
			for _, id := range fld.Names {
				if id.IsExported() {
					fn(fld.Type)
					break
				}
			}
		}
	case *ast.InterfaceType:
		fn(x)
	default:
		fn(x)
	}
}

// exprString is a type expression's source form, for messages.
func exprString(x ast.Expr) string {
	var b strings.Builder
	printer.Fprint(&b, token.NewFileSet(), x)
	return b.String()
}

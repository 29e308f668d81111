package test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cFunction is a function definition of a C file: its name and its body.
type cFunction struct {
	file, name string
	line       int
	body       []string // the lines between the braces
}

var cFuncName = regexp.MustCompile(`([A-Za-z_]\w*)\s*\(`)

// cFunctions finds the function definitions of a C file written in the
// project's style: the declarator starts in column 0, the body's braces are
// in column 0.
func cFunctions(t *testing.T, path string) []cFunction {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var fns []cFunction
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" || strings.ContainsAny(l[:1], " \t#/*}{") || !strings.Contains(l, "(") || strings.HasPrefix(l, "typedef") {
			continue
		}
		// The declarator runs to a line ending in ")" before a "{" line,
		// or to a one-line body.
		j := i
		for j < len(lines) && !strings.HasSuffix(strings.TrimSpace(lines[j]), ";") && lines[j] != "{" && !strings.HasSuffix(lines[j], "}") {
			j++
		}
		if j >= len(lines) || strings.HasSuffix(strings.TrimSpace(lines[j]), ";") {
			i = j
			continue // a declaration
		}
		decl := strings.Join(lines[i:j+1], " ")
		m := cFuncName.FindStringSubmatch(decl[:strings.Index(decl, "(")+1])
		if m == nil {
			continue
		}
		f := cFunction{file: filepath.Base(path), name: m[1], line: i + 1}
		if lines[j] != "{" { // one line: "type f(args) { body }"
			if k := strings.Index(lines[j], "{"); k >= 0 {
				f.body = []string{strings.TrimSuffix(lines[j][k+1:], "}")}
			}
			fns = append(fns, f)
			i = j
			continue
		}
		k := j + 1
		for k < len(lines) && lines[k] != "}" {
			k++
		}
		f.body = lines[j+1 : k]
		fns = append(fns, f)
		i = k
	}
	return fns
}

var goCall = regexp.MustCompile(`\brgapsgo_\w+\s*\(`)

// TestRmwGoCallsBlockSignals checks the signal contract of the rmw's C
// half (rmw/sig.h) on its source: a function that calls Go (rgapsgo_*)
// starts with RGAPS_GO_CALLS, so the asynchronous signals are blocked
// around every call into Go, or blocks them itself (rgaps_sig_block, as
// rmw_wait does, to sleep with the caller's mask between calls). A helper
// that is not an rmw_* entry point may instead rely on its callers, when
// every one of them is covered that way (a decode step called once per
// message need not block the signals again).
func TestRmwGoCallsBlockSignals(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "rmw", "*.c"))
	if err != nil {
		t.Fatal(err)
	}
	var fns []cFunction
	for _, path := range files {
		fns = append(fns, cFunctions(t, path)...)
	}
	byName := map[string]cFunction{}
	callers := map[string][]string{}
	for _, f := range fns {
		byName[f.name] = f
	}
	for _, f := range fns {
		body := strings.Join(f.body, "\n")
		for name := range byName {
			if name != f.name && regexp.MustCompile(`\b`+name+`\s*\(`).MatchString(body) {
				callers[name] = append(callers[name], f.name)
			}
		}
	}
	blocks := func(f cFunction) bool {
		for _, l := range f.body {
			if s := strings.TrimSpace(l); s != "" && !strings.HasPrefix(s, "/*") && !strings.HasPrefix(s, "*") {
				return s == "RGAPS_GO_CALLS;" || strings.Contains(strings.Join(f.body, "\n"), "rgaps_sig_block(")
			}
		}
		return false
	}
	// covered: the signals are blocked whenever f runs.
	memo := map[string]bool{}
	var covered func(name string, depth int) bool
	covered = func(name string, depth int) bool {
		if v, ok := memo[name]; ok {
			return v
		}
		f := byName[name]
		ok := blocks(f)
		if !ok && !strings.HasPrefix(name, "rmw_") && len(callers[name]) > 0 && depth < 8 {
			ok = true
			for _, c := range callers[name] {
				ok = ok && covered(c, depth+1)
			}
		}
		memo[name] = ok
		return ok
	}
	calling := 0
	for _, f := range fns {
		if !goCall.MatchString(strings.Join(f.body, "\n")) {
			continue
		}
		calling++
		if !covered(f.name, 0) {
			t.Errorf("%s:%d: %s calls Go but does not start with RGAPS_GO_CALLS (nor is every caller of it covered)", f.file, f.line, f.name)
		}
	}
	t.Logf("%d C functions in rmw/, %d of them call Go", len(fns), calling)
	if len(fns) < 100 || calling < 30 {
		t.Fatalf("found %d functions, %d calling Go: the parser missed the files' functions", len(fns), calling)
	}
}

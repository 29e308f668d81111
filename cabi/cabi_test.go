package cabi

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

// engineSentinels is every exported error of zerocopy (errors.go) with the
// class it must have. TestEverySentinelMapped checks that the list is
// complete, so a sentinel added to the engine fails here until it is
// classed.
var engineSentinels = map[string]struct {
	err  error
	code Code
}{
	"ErrInvalid":          {zerocopy.ErrInvalid, Invalid},
	"ErrCorrupt":          {zerocopy.ErrCorrupt, Corrupt},
	"ErrVersion":          {zerocopy.ErrVersion, Corrupt},
	"ErrTypeMismatch":     {zerocopy.ErrTypeMismatch, TypeMismatch},
	"ErrNoData":           {zerocopy.ErrNoData, NoData},
	"ErrTimeout":          {zerocopy.ErrTimeout, Timeout},
	"ErrPoolExhausted":    {zerocopy.ErrPoolExhausted, PoolExhausted},
	"ErrQueueFull":        {zerocopy.ErrQueueFull, QueueFull},
	"ErrTooLarge":         {zerocopy.ErrTooLarge, TooLarge},
	"ErrTooManyLoans":     {zerocopy.ErrTooManyLoans, Limit},
	"ErrTooManyEndpoints": {zerocopy.ErrTooManyEndpoints, Limit},
	"ErrTooManyNodes":     {zerocopy.ErrTooManyNodes, Limit},
	"ErrNoSpace":          {zerocopy.ErrNoSpace, NoSpace},
	"ErrUntrusted":        {zerocopy.ErrUntrusted, Untrusted},
	"ErrClosed":           {zerocopy.ErrClosed, Closed},
	"ErrNotSupported":     {zerocopy.ErrNotSupported, NotSupported},
}

// exportedErrors lists the exported package-level variables named Err* of
// a Go file.
func exportedErrors(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, sp := range g.Specs {
			for _, n := range sp.(*ast.ValueSpec).Names {
				if strings.HasPrefix(n.Name, "Err") && n.IsExported() {
					names = append(names, n.Name)
				}
			}
		}
	}
	return names
}

func TestEverySentinelMapped(t *testing.T) {
	names := exportedErrors(t, "../zerocopy/errors.go")
	if len(names) < 10 {
		t.Fatalf("found only %d sentinels in zerocopy/errors.go: %v", len(names), names)
	}
	for _, n := range names {
		if _, ok := engineSentinels[n]; !ok {
			t.Errorf("zerocopy.%s has no class: add it to engineErrors (errors.go) and to this test", n)
		}
	}
	for name, s := range engineSentinels {
		if got := CodeOf(s.err); got != s.code {
			t.Errorf("CodeOf(zerocopy.%s) = %v, want %v", name, got, s.code)
		}
		// Wrapped with context, as the engine returns them.
		if got := CodeOf(fmt.Errorf("opening /x: %w", s.err)); got != s.code {
			t.Errorf("CodeOf(wrapped zerocopy.%s) = %v, want %v", name, got, s.code)
		}
		if s.code == Generic || s.code == OK {
			t.Errorf("zerocopy.%s is classed %v", name, s.code)
		}
	}
}

func TestOtherErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, OK},
		{"gpupool.ErrNoDaemon", fmt.Errorf("starting: %w", gpupool.ErrNoDaemon), NoDaemon},
		{"cuda.ErrClosed", cuda.ErrClosed, Closed},
		{"cuda.Error", &cuda.Error{Code: cuda.CodeOutOfMemory, Op: "cuMemAlloc_v2"}, Device},
		{"cuda not supported", &cuda.Error{Code: cuda.CodeNotSupported, Op: "cuMemCreate"}, NotSupported},
		{"context deadline", fmt.Errorf("waiting: %w", context.DeadlineExceeded), Timeout},
		{"I/O deadline", os.ErrDeadlineExceeded, Timeout},
		{"library's own", Errorf(BadHandle, "publisher handle is NULL"), BadHandle},
		{"library's own, wrapped", fmt.Errorf("x: %w", Errorf(NoMessage, "none held")), NoMessage},
		// A loan that found /dev/shm full: the pool class wins.
		{"pool over no space", fmt.Errorf("%w: %w", zerocopy.ErrPoolExhausted, zerocopy.ErrNoSpace), PoolExhausted},
		{"unknown", errors.New("something else"), Generic},
	} {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("%s: CodeOf = %v, want %v", c.name, got, c.want)
		}
	}
	// An unknown error keeps its message: the libraries report err.Error().
	err := fmt.Errorf("reading the graph: %w", errors.New("disk on fire"))
	if CodeOf(err) != Generic || err.Error() != "reading the graph: disk on fire" {
		t.Errorf("unknown error: %v %q", CodeOf(err), err)
	}
	if e := Errorf(Limit, "%d endpoints", 3); e.Error() != "3 endpoints" {
		t.Errorf("Errorf message %q", e.Error())
	}
}

func TestCodeNames(t *testing.T) {
	seen := map[string]Code{}
	for _, c := range append([]Code{OK}, Codes()...) {
		n := c.String()
		if n == "" || strings.HasPrefix(n, "cabi.Code(") {
			t.Errorf("code %d has no name", int(c))
		}
		if o, dup := seen[n]; dup {
			t.Errorf("codes %d and %d are both %q", int(o), int(c), n)
		}
		seen[n] = c
	}
	if s := Code(-1).String(); s != "cabi.Code(-1)" {
		t.Errorf("Code(-1) = %q", s)
	}
}

func TestHandles(t *testing.T) {
	var h Handles
	type a struct{ n int }
	type b struct{ s string }
	ka, kb := h.Put(&a{1}), h.Put(&b{"x"})
	if ka == 0 || kb == 0 || ka == kb {
		t.Fatalf("keys %d %d", ka, kb)
	}
	if v, ok := Get[*a](&h, ka); !ok || v.n != 1 {
		t.Errorf("Get a: %v %v", v, ok)
	}
	if v, ok := Get[*a](&h, kb); ok || v != nil {
		t.Errorf("Get of a handle of another type: %v %v", v, ok)
	}
	if _, ok := Get[*a](&h, 0); ok {
		t.Error("Get(0) found something")
	}
	if _, ok := Take[*a](&h, kb); ok {
		t.Error("Take of another type succeeded")
	}
	if _, ok := Get[*b](&h, kb); !ok {
		t.Error("a failed Take of another type removed the handle")
	}
	if v, ok := Take[*a](&h, ka); !ok || v.n != 1 {
		t.Errorf("Take: %v %v", v, ok)
	}
	if _, ok := Get[*a](&h, ka); ok {
		t.Error("Get after Take found the handle")
	}
	h.Drop(kb)
	h.Drop(kb) // twice: nothing
	if h.Len() != 0 {
		t.Errorf("Len %d after dropping everything", h.Len())
	}
	if k := h.Put(&a{2}); k == ka || k == kb {
		t.Errorf("key %d reused", k)
	}

	var at Handles
	if at.PutAt(0, 1) {
		t.Error("PutAt(0) succeeded")
	}
	if !at.PutAt(0x1000, &a{3}) || at.PutAt(0x1000, &a{4}) {
		t.Error("PutAt: a free key refused or a taken key accepted")
	}
	if v, ok := Get[*a](&at, 0x1000); !ok || v.n != 3 {
		t.Errorf("Get after PutAt: %v %v", v, ok)
	}
}

// One Take of a key wins, however many race for it.
func TestHandlesTakeOnce(t *testing.T) {
	var h Handles
	k := h.Put("v")
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, ok := Take[string](&h, k); ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Errorf("%d Takes won", wins)
	}
}

// guardedCall is an exported function's shape: a deferred recover that
// reports PanicError's class.
func guardedCall(fn func()) (err *Error) {
	defer func() {
		if r := recover(); r != nil {
			err = PanicError("cabi_test", r)
		}
	}()
	fn()
	return nil
}

func TestPanicGuard(t *testing.T) {
	var p *[64]byte
	if e := guardedCall(func() { Guarded("payload", func() { _ = p[3] }) }); e == nil || e.Code != Fault || !strings.HasPrefix(e.Msg, "payload: cannot read") {
		t.Errorf("fault in Guarded: %v", e)
	}
	if e := guardedCall(func() { panic("bug") }); e == nil || e.Code != Internal || !strings.Contains(e.Msg, "bug") {
		t.Errorf("panic: %v", e)
	}
	// A panic in Guarded that is not a fault goes on as it is.
	if e := guardedCall(func() { Guarded("x", func() { panic("other") }) }); e == nil || e.Code != Internal || !strings.Contains(e.Msg, "other") {
		t.Errorf("other panic in Guarded: %v", e)
	}
	if e := guardedCall(func() {}); e != nil {
		t.Errorf("no panic: %v", e)
	}
}

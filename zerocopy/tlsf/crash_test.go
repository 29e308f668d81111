package tlsf

import (
	"bytes"
	"slices"
	"testing"
)

// crash is the panic value testHookWrite uses to stop a call mid-way, as if
// the process had died between two metadata writes.
type crash struct{}

// runCrashing runs op with a simulated crash before metadata write number
// n (counting from 0) and reports whether op ran to completion instead.
func runCrashing(n int, op func()) (completed bool) {
	count := 0
	testHookWrite = func() {
		if count == n {
			panic(crash{})
		}
		count++
	}
	defer func() {
		testHookWrite = nil
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			completed = false
		}
	}()
	op()
	return true
}

func usedBlocks(a *Allocator) []Block {
	var out []Block
	a.ForEachUsed(func(b Block) bool { out = append(out, b); return true })
	return out
}

// crashBase returns metadata laid out as
//
//	A used | B free | C used | D used | E used | F free | G used | free tail
//
// with 1 KiB blocks in a 64 KiB pool, and the indices of A..G.
func crashBase(t *testing.T) ([]byte, [7]uint32) {
	meta := make([]byte, MetaSize(16))
	a, err := Init(meta, 64<<10, 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	var idx [7]uint32
	for i := range idx {
		b, err := a.Alloc(1024, 0)
		if err != nil {
			t.Fatal(err)
		}
		idx[i] = b.Index
	}
	for _, i := range []int{1, 5} {
		if err := a.Free(idx[i]); err != nil {
			t.Fatal(err)
		}
	}
	return meta, idx
}

// TestCrashConsistency interrupts Alloc and Free before every one of their
// metadata writes in turn, and checks that Rebuild then yields exactly the
// state before or after the call.
func TestCrashConsistency(t *testing.T) {
	const (
		A = iota
		B
		C
		D
		E
		F
		G
	)
	for _, tc := range []struct {
		name string
		op   func(a *Allocator, idx [7]uint32)
	}{
		{"alloc exact fit", func(a *Allocator, _ [7]uint32) { a.Alloc(1024, 0) }},
		{"alloc split", func(a *Allocator, _ [7]uint32) { a.Alloc(512, 0) }},
		{"alloc gap and split", func(a *Allocator, _ [7]uint32) { a.Alloc(64, 8<<10) }},
		{"alloc gap only", func(a *Allocator, _ [7]uint32) { a.Alloc(56<<10, 8<<10) }},
		{"free merging right", func(a *Allocator, idx [7]uint32) { a.Free(idx[A]) }},
		{"free merging left", func(a *Allocator, idx [7]uint32) { a.Free(idx[C]) }},
		{"free without merging", func(a *Allocator, idx [7]uint32) { a.Free(idx[D]) }},
		{"free merging right only", func(a *Allocator, idx [7]uint32) { a.Free(idx[E]) }},
		{"free merging both", func(a *Allocator, idx [7]uint32) { a.Free(idx[G]) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, idx := crashBase(t)
			before, _ := Attach(base)
			wantBefore, statsBefore := usedBlocks(before), before.Stats()

			done := bytes.Clone(base)
			after, _ := Attach(done)
			tc.op(after, idx)
			if err := after.Check(); err != nil {
				t.Fatal(err)
			}
			wantAfter, statsAfter := usedBlocks(after), after.Stats()
			if slices.Equal(wantBefore, wantAfter) {
				t.Fatal("the operation changed nothing")
			}

			sawBefore, sawAfter := false, false
			for n := 0; ; n++ {
				meta := bytes.Clone(base)
				a, _ := Attach(meta)
				if runCrashing(n, func() { tc.op(a, idx) }) {
					if !bytes.Equal(meta, done) {
						t.Fatal("uninterrupted run differs from the reference")
					}
					break
				}
				if err := a.Rebuild(); err != nil {
					t.Fatalf("crash before write %d: Rebuild: %v", n, err)
				}
				if err := a.Check(); err != nil {
					t.Fatalf("crash before write %d: Check after Rebuild: %v", n, err)
				}
				got, st := usedBlocks(a), a.Stats()
				switch {
				case slices.Equal(got, wantBefore) && st == statsBefore:
					sawBefore = true
				case slices.Equal(got, wantAfter) && st == statsAfter:
					sawAfter = true
				default:
					t.Fatalf("crash before write %d: rebuilt to used %v stats %+v; want before (%v %+v) or after (%v %+v)",
						n, got, st, wantBefore, statsBefore, wantAfter, statsAfter)
				}
			}
			if !sawBefore || !sawAfter {
				t.Fatalf("crashes led to before: %v, after: %v; want both", sawBefore, sawAfter)
			}
		})
	}
}

// TestCrashDuringRebuild interrupts Rebuild itself and reruns it.
func TestCrashDuringRebuild(t *testing.T) {
	base, idx := crashBase(t)
	a, _ := Attach(base)
	// An interrupted Free: C marked free next to free B, nothing else done.
	a.put32(hDirty, 1)
	a.put32(descOff(idx[2])+dState, stateFree)
	a.put32(hHeads, 12345)

	ref := bytes.Clone(base)
	r, _ := Attach(ref)
	if err := r.Rebuild(); err != nil {
		t.Fatal(err)
	}
	want := r.Stats()
	for n := 0; ; n++ {
		meta := bytes.Clone(base)
		a, _ := Attach(meta)
		if runCrashing(n, func() { a.Rebuild() }) {
			break
		}
		if err := a.Rebuild(); err != nil {
			t.Fatalf("crash before write %d: second Rebuild: %v", n, err)
		}
		if err := a.Check(); err != nil {
			t.Fatalf("crash before write %d: %v", n, err)
		}
		if st := a.Stats(); st != want {
			t.Fatalf("crash before write %d: stats %+v, want %+v", n, st, want)
		}
	}
}

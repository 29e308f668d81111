package benchlocal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bench/util/benchtest"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

func init() {
	testutil.Role("bench-child", func([]string) error { return ChildMain() })
	testutil.Role("bench-fail", func([]string) error { return errors.New("boom: this subscriber refuses to start") })
}

func tinyOptions(t *testing.T) Options {
	return Options{
		Sizes: []int{64, 4 << 10}, Subs: []int{1, 2}, Iters: 20, Warmup: 3,
		AllocSizes: []int{64, 4 << 10}, AllocSamples: 200,
		Child: benchtest.ChildCmd(t, "bench-child"),
	}
}

func TestRunLocal(t *testing.T) {
	o := tinyOptions(t)
	var progress bytes.Buffer
	o.Progress = &progress
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\nprogress:\n%s", err, progress.String())
	}
	benchtest.NoSegments(t, res.Settings.Prefix)
	if !res.Settings.Settle {
		t.Error("the default run does not wait for the subscribers to sleep")
	}

	if len(res.Alloc) != len(o.AllocSizes) {
		t.Fatalf("%d allocation rows, want %d", len(res.Alloc), len(o.AllocSizes))
	}
	for _, a := range res.Alloc {
		if a.Samples != o.AllocSamples || a.TLSFP50 > a.TLSFP99 || a.LoanP50 > a.LoanP99 || a.LoanP99 > a.LoanMax || a.TLSFP50 == 0 || a.LoanP50 == 0 {
			t.Errorf("allocation row %+v", a)
		}
	}

	// Per N: the floor, and per size rgaps, its paused floor and UDS.
	if want := (3*len(o.Sizes) + 1) * len(o.Subs); len(res.Cells) != want {
		t.Fatalf("%d cells, want %d", len(res.Cells), want)
	}
	for _, n := range o.Subs {
		f := res.findCell(PathFutex, 0, n)
		if f == nil {
			t.Fatalf("no futex floor cell for N=%d", n)
		}
		if len(f.Lat) != n || len(f.Send) != o.Iters {
			t.Errorf("floor N=%d: %d latency rows, %d send samples", n, len(f.Lat), len(f.Send))
		}
		for s := range n {
			if len(f.Lat[s]) != o.Iters || f.Received[s] != o.Iters+o.Warmup {
				t.Errorf("floor N=%d: subscriber %d has %d samples of %d received", n, s, len(f.Lat[s]), f.Received[s])
			}
		}
		if st := f.Stats; st.P50 <= 0 || st.P50 > st.P99 || st.P50 > st.AllP50 {
			t.Errorf("floor N=%d: stats %+v", n, st)
		}
	}
	for _, size := range o.Sizes {
		for _, n := range o.Subs {
			for _, path := range []string{PathRgaps, PathUDS} {
				c := res.findCell(path, size, n)
				if c == nil {
					t.Fatalf("no cell %s %d N=%d", path, size, n)
				}
				if c.Iters != o.Iters || c.Warmup != o.Warmup || len(c.Lat) != n || len(c.Send) != o.Iters {
					t.Errorf("cell %s %d N=%d: iters %d warmup %d, %d latency rows, %d send samples", path, size, n, c.Iters, c.Warmup, len(c.Lat), len(c.Send))
				}
				for s := range n {
					if len(c.Lat[s]) != o.Iters {
						t.Errorf("cell %s %d N=%d: subscriber %d has %d samples", path, size, n, s, len(c.Lat[s]))
					}
					// Every message reached every subscriber with the right
					// bytes (each child checks every byte, on both paths).
					if c.Received[s] != o.Iters+o.Warmup || c.Bad[s] != 0 {
						t.Errorf("cell %s %d N=%d: subscriber %d received %d messages, %d bad (%s)", path, size, n, s, c.Received[s], c.Bad[s], c.FirstBad)
					}
				}
				if path == PathRgaps {
					// The stages: Wait returns before the sample is taken,
					// and the publish queues before its wake call returns.
					if len(c.Wake) != n || len(c.Queued) != o.Iters || len(c.Woken) != o.Iters || len(c.Idle) != o.Iters {
						t.Fatalf("cell %s %d N=%d: %d wake rows, %d queued, %d woken, %d idle", path, size, n, len(c.Wake), len(c.Queued), len(c.Woken), len(c.Idle))
					}
					// The floor paused as long as this cell's publisher
					// took from the acknowledgements to t0.
					f := res.findCell(PathFutex, size, n)
					if f == nil || c.Stats.IdleP50 <= 0 || f.Pause != c.Stats.IdleP50 || len(f.Lat) != n || len(f.Send) != o.Iters || f.Stats.P50 <= 0 {
						t.Fatalf("cell %s %d N=%d (idle p50 %d ns): paused floor %+v", path, size, n, c.Stats.IdleP50, f)
					}
					for s := range n {
						for i, w := range c.Wake[s] {
							if w > c.Lat[s][i] {
								t.Errorf("cell %s %d N=%d: subscriber %d woke at %d ns, after it took the sample at %d", path, size, n, s, w, c.Lat[s][i])
							}
						}
					}
					for i := range c.Queued {
						if c.Queued[i] > c.Woken[i] || c.Woken[i] > c.Send[i] {
							t.Errorf("cell %s %d N=%d: message %d queued %d, woken %d, Publish returned %d ns", path, size, n, i, c.Queued[i], c.Woken[i], c.Send[i])
						}
					}
				}
				st := c.Stats
				if st.P50 > st.P99 || st.P99 > st.Max || st.AllP50 > st.AllP99 || st.P50 > st.AllP50 {
					t.Errorf("cell %s %d N=%d: inconsistent stats %+v", path, size, n, st)
				}
				if n == 1 && (st.P50 != st.AllP50 || st.P99 != st.AllP99) {
					t.Errorf("cell %s %d N=1: all-woke differs from the only subscriber: %+v", path, size, st)
				}
			}
		}
	}

	var md bytes.Buffer
	res.WriteMarkdown(&md)
	tables := benchtest.MarkdownTables(t, md.String())
	if len(tables) != 3 {
		t.Fatalf("%d tables, want 3:\n%s", len(tables), md.String())
	}
	if got, want := len(tables[0]), len(o.AllocSizes); got != want {
		t.Errorf("allocation table has %d rows, want %d", got, want)
	}
	for k, what := range []string{"wakeup", "UDS"} {
		if got, want := len(tables[1+k]), len(o.Sizes)*len(o.Subs); got != want {
			t.Errorf("%s table has %d rows, want %d", what, got, want)
		}
	}
	for _, want := range []string{"# rgaps-bench local", "## Summary", "TLSF alloc+free p99 ≤ 1 µs", "garbage collections", "Wakeup p50 ≤ 5 µs", "futex floor of 2 processes", "when they sleep as long before the wake", "Flat across N", "Flat across size", "Sleep before send", "all correct", res.Machine.Kernel, res.Machine.Go} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(progress.String(), "[14/14]") == false {
		t.Errorf("progress lacks the last cell:\n%s", progress.String())
	}

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"machine", "settings", "alloc", "cells", "elapsed_s"} {
		if _, ok := back[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
}

// Without waiting for the subscribers to sleep, the floor's and rgaps'
// messages still all arrive (a subscriber may see its message before it
// sleeps).
func TestRunNoSettle(t *testing.T) {
	o := tinyOptions(t)
	o.NoSettle = true
	o.Sizes, o.Subs, o.AllocSizes, o.AllocSamples = []int{64}, []int{2}, []int{64}, 10
	o.paths = []string{PathFutex, PathRgaps}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Settings.Settle || len(res.Cells) != 3 { // the floor, rgaps, the paused floor
		t.Fatalf("settle %v, %d cells", res.Settings.Settle, len(res.Cells))
	}
	for _, c := range res.Cells {
		for s := range c.Received {
			if c.Received[s] != o.Iters+o.Warmup || c.Bad[s] != 0 {
				t.Errorf("%s: subscriber %d received %d, %d bad", c.Path, s, c.Received[s], c.Bad[s])
			}
		}
	}
	benchtest.NoSegments(t, res.Settings.Prefix)
}

func TestRunCancelCleansUp(t *testing.T) {
	for _, path := range []string{PathRgaps, PathUDS, PathFutex} {
		t.Run(path, func(t *testing.T) {
			o := tinyOptions(t)
			o.Iters = MaxIters // does not end by itself before the cancel
			o.Subs = []int{2}
			o.Sizes = []int{4 << 10}
			o.paths = []string{path}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var once sync.Once
			o.Progress = &benchtest.SyncBuffer{Hook: func(line string) {
				if strings.Contains(line, "] "+path+" ") {
					once.Do(func() { time.AfterFunc(100*time.Millisecond, cancel) })
				}
			}}
			o.Prefix = ""
			_, err := Run(ctx, o)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled run returned %v", err)
			}
			// Run made up the prefix; it is the same function of the pid.
			oo, _ := Options{}.withDefaults()
			benchtest.NoSegments(t, oo.Prefix)
		})
	}
}

func TestChildFailure(t *testing.T) {
	o := tinyOptions(t)
	o.Child = benchtest.ChildCmd(t, "bench-fail")
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("run with failing subscribers: %v (want their stderr in the error)", err)
	}
	t.Log(err)
	oo, _ := Options{}.withDefaults()
	benchtest.NoSegments(t, oo.Prefix)
}

func TestPattern(t *testing.T) {
	for _, size := range []int{16, 17, 64, 4099} {
		b := make([]byte, size)
		fill(b, 7)
		stamp(b, 12345)
		if msg := check(b, 7, size); msg != "" {
			t.Fatalf("size %d: %s", size, msg)
		}
		if stampOf(b) != 12345 {
			t.Fatal("stamp lost")
		}
		if check(b, 8, size) == "" {
			t.Errorf("size %d: message 7 passes as message 8", size)
		}
		if check(b[:size-1], 7, size) == "" {
			t.Errorf("size %d: short message passes", size)
		}
		b[size-1] ^= 1
		if check(b, 7, size) == "" {
			t.Errorf("size %d: flipped last byte passes", size)
		}
		b[size-1] ^= 1
		if size > headerSize {
			b[headerSize] ^= 0x80
			if check(b, 7, size) == "" {
				t.Errorf("size %d: flipped first payload byte passes", size)
			}
		}
	}
}

func TestItersFor(t *testing.T) {
	if i, w := ItersFor(64<<20, 300, 50); i != 30 || w != 5 {
		t.Errorf("ItersFor(64 MiB) = %d, %d", i, w)
	}
	if i, w := ItersFor(64<<20, 20, 3); i != 10 || w != 2 {
		t.Errorf("ItersFor(64 MiB, 20, 3) = %d, %d", i, w)
	}
	if _, err := Run(context.Background(), Options{Sizes: []int{8}}); err == nil {
		t.Error("Run accepted an 8-byte message")
	}
}

package zerocopy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
	"golang.org/x/sys/unix"
)

// The field-by-field corruption sweep (issue 12): every 4-byte word of
// every shared-memory format this package owns is overwritten, in turn, in
// a live segment, and the segment is then used:
//
//   - topic segment of a host topic: the whole header page (static words,
//     lock, futex words, counters, commit words, padding), the publisher's
//     and the subscription's endpoint slots (every field, the ring and the
//     held entries, the padding up to the stride), six sample records (free
//     ones on the free list, a held, a queued and a loaned one, and one past
//     samplesMade; every message has a meta block, so the meta words of
//     version 3 are swept too), and the host pool's TLSF metadata: the header (counters,
//     bitmaps, guards, every free-list head) and descriptors 0 to 8, which
//     are of every kind (the nil descriptor, free blocks, used blocks, an
//     unused descriptor on the free-descriptor list, two never formatted);
//   - topic segment of a GPU topic used by host endpoints (no GPU needed:
//     host endpoints use its staging pool): the header page (the device
//     pool's words included) and the device pool's TLSF metadata (header and
//     descriptors 0 to 2: what exists until a GPU endpoint allocates; the
//     device allocator's descriptors in use need a GPU, see gpu_test.go);
//   - graph segment: the header page (static words, lock, generation,
//     padding) and two used and one free node slot.
//
// The topic cases run with messages queued, taken and loaned; then the topic
// is used by its endpoints, a new joiner and the janitor. The graph cases
// list the nodes from two domains and register and close a node. For each
// word: no crash (the sweep runs in a child whose exit is checked), no hang
// (each case has a deadline), no wrong data (every message taken is one
// that was published, byte for byte; every node listed is one that was
// registered, field for field), and every error is one the API documents,
// damage being ErrCorrupt; another topic keeps working. With -short (and
// under the race detector) every 8th word is taken.

const sweepDomain = 13

func sweepCfg() Config {
	cfg, _ := Config{Domain: sweepDomain, PoolSize: 1 << 20, StagingSize: 1 << 20, MaxSamples: 64, MaxEndpoints: 8, QueueCap: 16, HeldCap: 8,
		JanitorPeriod: 10 * time.Millisecond, BlockTimeout: 50 * time.Millisecond, LockTimeout: 5 * time.Second}.withDefaults()
	return cfg
}

// sweepRegion is a range of words of one segment format: [off, end).
type sweepRegion struct {
	kind     PoolKind // of the topic segment (graph regions: unused)
	off, end uint64
	graph    bool
}

// sweepRegions lists the regions swept. Slots 0 and 1 are the publisher's
// and the subscription's (created in that order).
func sweepRegions() map[string]sweepRegion {
	l := layoutFor(sweepCfg(), PoolHost)
	g := layoutFor(sweepCfg(), PoolGPU)
	const tlsfHeader, desc = 8552, 40
	return map[string]sweepRegion{
		"header":     {PoolHost, 0, headerSize, false},
		"slots":      {PoolHost, l.endpointsOff, l.endpointsOff + 2*l.endpointStride, false},
		"samples":    {PoolHost, l.samplesOff, l.samplesOff + 6*sampleStride, false},
		"tlsf":       {PoolHost, l.tlsfOff, l.tlsfOff + tlsfHeader + 9*desc, false},
		"gpu-header": {PoolGPU, 0, headerSize, false},
		"gpu-tlsf":   {PoolGPU, g.devTLSFOff, g.devTLSFOff + tlsfHeader + 3*desc, false},
		"graph":      {0, 0, gNodesOff + 3*nodeStride, true},
	}
}

func init() {
	// sweep REGION STRIDE: run the sweep over one region, printing a line
	// per case and "done"; a wrong message or an unexpected error prints a
	// line starting with "BAD".
	testutil.Role("sweep", func(a []string) error {
		reg, ok := sweepRegions()[a[0]]
		if !ok {
			return fmt.Errorf("no region %q", a[0])
		}
		stride, _ := strconv.ParseUint(a[1], 10, 64)
		cfg := sweepCfg()
		d, err := Open(cfg)
		if err != nil {
			return err
		}
		defer d.Close()
		joiner, err := Open(cfg)
		if err != nil {
			return err
		}
		defer joiner.Close()
		op, err := d.NewPublisher(EndpointSpec{Topic: "/sweep_other", Type: "t/msg/T", QoS: qos.Default()})
		if err != nil {
			return err
		}
		defer op.Close()
		os_, err := d.NewSubscription(EndpointSpec{Topic: "/sweep_other", Type: "t/msg/T", QoS: qos.Default()})
		if err != nil {
			return err
		}
		defer os_.Close()
		typ := "t/msg/T"
		if reg.kind == PoolGPU {
			typ = "t/msg/G"
		}
		name, _ := segName(cfg, "/sweep", typ)
		path := filepath.Join(shm.Dir, name)
		if reg.graph {
			path = filepath.Join(shm.Dir, graphName(cfg))
		}
		for off, i := reg.off, 0; off < reg.end; off, i = off+4*stride, i+1 {
			val := uint32(0xffffffff)
			if i%2 == 1 {
				val = 0x5a5a5a5a
			}
			res := make(chan string, 1)
			go func() {
				if reg.graph {
					res <- graphSweepCase(d, joiner, path, off, val, i)
					return
				}
				if reg.kind == PoolGPU {
					// Made as a GPU endpoint would make it; host endpoints
					// then use its staging pool.
					seg, err := createSegment(cfg, name, "/sweep", typ, PoolGPU)
					if err != nil {
						res <- "BAD setup: " + err.Error()
						return
					}
					seg.Close()
				}
				res <- sweepCase(d, joiner, typ, path, off, val, i)
			}()
			select {
			case r := <-res:
				fmt.Printf("case %s @%d=%#x: %s\n", a[0], off-reg.off, val, r)
			case <-time.After(60 * time.Second):
				fmt.Printf("BAD case %s @%d=%#x: hang\n", a[0], off-reg.off, val)
				return errors.New("hang")
			}
			if err := op.Publish([]byte("other")); err != nil {
				fmt.Printf("BAD other topic after @%d: %v\n", off-reg.off, err)
			} else if smp, err := os_.TakeWait(10 * time.Second); err != nil || string(smp.Bytes()) != "other" {
				fmt.Printf("BAD other topic after @%d: %v\n", off-reg.off, err)
			} else {
				smp.Return()
			}
			if reg.graph {
				continue
			}
			// What the case left: removed if damaged and unused. The
			// janitor may hold the topic a moment longer (Clean skips
			// topics this process has open): poll.
			gone := false
			for deadline := time.Now().Add(30 * time.Second); !gone && time.Now().Before(deadline); {
				d.Clean()
				if _, err := os.Stat(path); err != nil {
					gone = true
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
			if !gone {
				fmt.Printf("BAD case @%d left its segment\n", off-reg.off)
				os.Remove(path)
			}
		}
		fmt.Println("done")
		return nil
	})
}

// sweepBeforePatch, when set, runs in sweepCase once the topic is in use,
// right before the damage.
var sweepBeforePatch func()

// sweepCase builds the topic, damages the word at off, uses the topic and
// reports the errors seen; "BAD ..." for a wrong message or an error the
// API does not document.
func sweepCase(d, joiner *Domain, typ, path string, off uint64, val uint32, i int) string {
	var bad, seen []string
	note := func(what string, err error) {
		if err == nil {
			return
		}
		for _, ok := range []error{ErrCorrupt, ErrVersion, ErrNoData, ErrTimeout, ErrPoolExhausted, ErrQueueFull, ErrTooManyLoans, ErrClosed, shm.ErrLockTimeout} {
			if errors.Is(err, ok) {
				if errors.Is(err, ErrCorrupt) {
					seen = append(seen, what+": corrupt")
				}
				return
			}
		}
		if errors.Is(err, ErrInvalid) && strings.Contains(err.Error(), "not held") {
			return // a loan or sample the damage took away
		}
		bad = append(bad, fmt.Sprintf("%s: %v", what, err))
	}
	q := qos.Default()
	q.Depth = 8
	p, err := d.NewPublisher(EndpointSpec{Topic: "/sweep", Type: typ, QoS: q})
	if err != nil {
		return "BAD setup: " + err.Error()
	}
	s, err := d.NewSubscription(EndpointSpec{Topic: "/sweep", Type: typ, QoS: q})
	if err != nil {
		p.Close()
		return "BAD setup: " + err.Error()
	}
	published := map[string]string{} // payload → meta
	pub := func(k int) {
		m := fmt.Sprintf("case %d message %d %s", i, k, strings.Repeat("x", 100*k))
		meta := fmt.Sprintf("meta %d of case %d", k, i)
		published[m] = meta
		l, err := p.Loan(len(m))
		if err != nil {
			note("loan", err)
			return
		}
		copy(l.Bytes(), m)
		if err := l.SetMeta([]byte(meta)); err != nil {
			note("set meta", err)
			note("discard", l.Discard())
			return
		}
		note("publish", l.Publish())
	}
	take := func(what string) {
		smp, err := s.Take()
		note(what, err)
		if err == nil {
			if meta, ok := published[string(smp.Bytes())]; !ok || meta != string(smp.Meta()) {
				bad = append(bad, fmt.Sprintf("%s delivered %d bytes and meta %.40q nobody published: %.40q", what, len(smp.Bytes()), smp.Meta(), smp.Bytes()))
			}
			note("return", smp.Return())
		}
	}
	// Samples 1 and 2 freed (on the free list; their blocks merged, which
	// leaves an unused allocator descriptor), 3 held by the subscription,
	// 4 queued, 5 loaned; record 6 is past samplesMade.
	for k := 1; k <= 4; k++ {
		pub(k)
	}
	loan, err := p.Loan(100)
	if err != nil {
		return "BAD setup loan: " + err.Error()
	}
	if err := loan.SetMeta([]byte("loaned meta")); err != nil {
		return "BAD setup meta: " + err.Error()
	}
	for k := 0; k < 2; k++ {
		smp, err := s.Take()
		if err != nil {
			return "BAD setup take: " + err.Error()
		}
		smp.Return()
	}
	held, err := s.Take()
	if err != nil {
		return "BAD setup take: " + err.Error()
	}
	if sweepBeforePatch != nil {
		sweepBeforePatch()
	}
	patch(path, int64(off), binary.LittleEndian.AppendUint32(nil, val))

	for k := 0; k < 3; k++ {
		take("take")
	}
	note("return held", held.Return())
	note("discard", loan.Discard())
	pub(4)
	if smp, err := s.TakeWait(100 * time.Millisecond); err == nil {
		if meta, ok := published[string(smp.Bytes())]; !ok || meta != string(smp.Meta()) {
			bad = append(bad, fmt.Sprintf("take-wait delivered %d bytes nobody published", len(smp.Bytes())))
		}
		note("return", smp.Return())
	} else {
		note("take-wait", err)
	}
	js, err := joiner.NewSubscription(EndpointSpec{Topic: "/sweep", Type: typ, QoS: q})
	note("join", err)
	if err == nil {
		note("joiner close", js.Close())
	}
	d.Reclaim()
	note("close publisher", p.Close())
	note("close subscription", s.Close())
	if len(bad) > 0 {
		return "BAD " + strings.Join(bad, "; ")
	}
	if len(seen) > 0 {
		return "corrupt (" + strings.Join(seen, ", ") + ")"
	}
	return "ok"
}

// graphSweepCase registers a node in each of two domains, damages the
// word at off of the graph segment at path, then lists the nodes from both,
// registers a third and closes them all. Every listing must hold registered
// nodes only, field for field; an error must be ErrCorrupt (the domain that
// finds the damage replaces the segment) or a lock timeout; and within a
// deadline both domains list every node again. The word is put back when
// the segment was not replaced.
func graphSweepCase(d, joiner *Domain, path string, off uint64, val uint32, i int) string {
	var bad, seen []string
	note := func(what string, err error) {
		switch {
		case err == nil, errors.Is(err, shm.ErrLockTimeout):
		case errors.Is(err, ErrCorrupt):
			seen = append(seen, what+": corrupt")
		default:
			bad = append(bad, fmt.Sprintf("%s: %v", what, err))
		}
	}
	a, err := d.RegisterNode(fmt.Sprintf("sweep_a%d", i), "/sweep", "/enclave")
	if err != nil {
		return "BAD setup: " + err.Error()
	}
	b, err := joiner.RegisterNode(fmt.Sprintf("sweep_b%d", i), "/sweep", "/")
	if err != nil {
		a.Close()
		return "BAD setup: " + err.Error()
	}
	want := map[string]NodeInfo{a.Info().FullName(): a.Info(), b.Info().FullName(): b.Info()}
	cond := d.NewGraphCondition()
	var st syscall.Stat_t
	syscall.Stat(path, &st)
	orig := make([]byte, 4)
	if f, err := os.Open(path); err == nil {
		f.ReadAt(orig, int64(off))
		f.Close()
	}
	patch(path, int64(off), binary.LittleEndian.AppendUint32(nil, val))

	complete := func(what string, dom *Domain) bool {
		nodes, err := dom.Nodes()
		note(what, err)
		if err != nil {
			return false
		}
		found := 0
		for _, n := range nodes {
			w, ok := want[n.FullName()]
			switch {
			case !ok:
				bad = append(bad, fmt.Sprintf("%s listed a node nobody registered: %+v", what, n))
			case n != w:
				bad = append(bad, fmt.Sprintf("%s listed %+v, registered %+v", what, n, w))
			default:
				found++
			}
		}
		return found == len(want)
	}
	complete("nodes", d)
	complete("joiner nodes", joiner)
	cond.Ready()
	c, err := d.RegisterNode(fmt.Sprintf("sweep_c%d", i), "/sweep", "/")
	note("register", err)
	if err == nil {
		want[c.Info().FullName()] = c.Info()
	}
	deadline := time.Now().Add(30 * time.Second)
	for !complete("nodes", d) || !complete("joiner nodes", joiner) {
		if time.Now().After(deadline) || len(bad) > 0 {
			bad = append(bad, "the domains do not list every registered node")
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c != nil {
		note("close", c.Close())
	}
	note("close", a.Close())
	note("close", b.Close())
	var now syscall.Stat_t
	if syscall.Stat(path, &now) == nil && now.Ino == st.Ino {
		patch(path, int64(off), orig)
	}
	if len(bad) > 0 {
		return "BAD " + strings.Join(bad, "; ")
	}
	if len(seen) > 0 {
		return "corrupt (" + strings.Join(seen, ", ") + ")"
	}
	return "ok"
}

func TestCorruptionSweep(t *testing.T) {
	for _, region := range []string{"header", "slots", "samples", "tlsf", "gpu-header", "gpu-tlsf", "graph"} {
		t.Run(region, func(t *testing.T) {
			stride := "1"
			if testing.Short() || raceEnabled {
				stride = "8"
			}
			k := testutil.Start(t, "sweep", region, stride)
			var lines []string
			for l := range k.Lines {
				lines = append(lines, l)
				if strings.HasPrefix(l, "BAD") || strings.Contains(l, ": BAD") {
					t.Error(l)
				}
			}
			err := k.Wait(time.Minute)
			if err != nil || len(lines) == 0 || lines[len(lines)-1] != "done" {
				last := ""
				if len(lines) > 0 {
					last = lines[len(lines)-1]
				}
				t.Fatalf("sweep child: %v after %q\n%s", err, last, k.Stderr())
			}
			corrupt := 0
			for _, l := range lines {
				if strings.Contains(l, ": corrupt") {
					corrupt++
				}
			}
			t.Logf("%d cases, %d found corrupt", len(lines)-1, corrupt)
		})
	}
}

// Commit words (topic format v2) that claim more than was committed, in a
// /dev/shm with no room left: whoever believes one touches a page that was
// never committed, which on a full tmpfs is a SIGBUS. It must become
// ErrCorrupt on that topic (the fault guard), never a crash, and deliver
// nothing wrong; values past a region's end are cut to the region (so to
// the file's size) by every reader. The body runs in a child process with a
// small /dev/shm of its own.
func TestCommitWordLiesOnFullShm(t *testing.T) {
	if !testutil.InSmallShm(t, "16m") {
		return
	}
	cfg := sweepCfg()
	d, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	joiner, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer joiner.Close()
	name, _ := segName(cfg, "/sweep", "t/msg/T")
	path := filepath.Join(shm.Dir, name)
	filler := filepath.Join(shm.Dir, testutil.Prefix()+"_filler")
	defer os.Remove(filler)
	sweepBeforePatch = func() {
		f, err := os.OpenFile(filler, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		// Take every page left, a megabyte then a page at a time.
		var at int64
		for _, step := range []int64{1 << 20, 4096} {
			for unix.Fallocate(int(f.Fd()), 0, at, step) == nil {
				at += step
			}
		}
	}
	defer func() { sweepBeforePatch = nil }()
	l := layoutFor(cfg, PoolHost)
	for i, c := range []struct {
		word string
		off  uint64
		val  uint32
	}{
		{"slots", hSlots, l.maxEndpoints},
		{"slots", hSlots, 0xffffffff},
		{"samplesMade", hSamplesMade, l.maxSamples},
		{"samplesMade", hSamplesMade, 0xffffffff},
		{"poolCommitted", hPoolCommitted, uint32(l.poolSize)},
		{"poolCommitted", hPoolCommitted + 4, 0xffffffff},
		{"metaCommitted", hMetaCommitted, uint32(l.tlsfSize)},
		{"metaCommitted", hMetaCommitted + 4, 0xffffffff},
	} {
		r := sweepCase(d, joiner, "t/msg/T", path, c.off, c.val, i)
		os.Remove(filler)
		if strings.HasPrefix(r, "BAD") {
			t.Errorf("%s = %#x: %s", c.word, c.val, r)
		} else {
			t.Logf("%s = %#x: %s", c.word, c.val, r)
		}
		testutil.Eventually(t, 30*time.Second, "the damaged topic removed", func() bool {
			d.Clean()
			_, err := os.Stat(path)
			return err != nil
		})
	}
}

// A graph segment truncated under its users (to nothing, or inside the
// node slots): no crash; the first operation that finds it fails with
// ErrCorrupt and replaces the segment, and both domains list both nodes
// again within a deadline.
func TestGraphTruncated(t *testing.T) {
	for _, size := range []int64{0, gNodesOff + nodeStride/2} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			cfg := sweepCfg()
			cfg.Domain = 14
			d, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			other, err := Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			a, err := d.RegisterNode("trunc_a", "/", "/")
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			b, err := other.RegisterNode("trunc_b", "/", "/")
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			cond := d.NewGraphCondition()
			if err := os.Truncate(filepath.Join(shm.Dir, graphName(cfg)), size); err != nil {
				t.Fatal(err)
			}
			cond.Ready() // never faults
			testutil.Eventually(t, 30*time.Second, "both domains list both nodes", func() bool {
				for _, dom := range []*Domain{d, other} {
					nodes, err := dom.Nodes()
					if err != nil && !errors.Is(err, ErrCorrupt) {
						t.Fatal(err)
					}
					if len(nodes) != 2 {
						return false
					}
				}
				return true
			})
		})
	}
}

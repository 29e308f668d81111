package bridge

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// requireGPU skips without a GPU (fails with RGAPS_REQUIRE_GPU=1) and
// returns a copier of d, closed at cleanup: the tests move bytes between
// host and device memory through the engine, as the bridge does.
func requireGPU(t *testing.T, d *zerocopy.Domain) *zerocopy.Copier {
	t.Helper()
	cp, err := d.NewCopier()
	testutil.SkipWithoutGPU(t, err, zerocopy.ErrNotSupported)
	if err != nil {
		t.Fatal(err)
	}
	testutil.AllowCurrentFDs()
	t.Cleanup(func() { cp.Close() })
	t.Setenv("RGAPS_DAEMON", os.Args[0])
	t.Setenv("RGAPS_DAEMON_IDLE", "2s")
	return cp
}

// hostBuffer maps n bytes outside the Go heap (what a copier's host side
// must be), pinned for d's GPU, both undone at cleanup.
func hostBuffer(t *testing.T, d *zerocopy.Domain, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	unpin, err := d.PinHost(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unpin() })
	return b
}

// A GPU publisher on host a, a GPU subscriber on host b: host a's bridge
// reads the device form (no host copy by the publisher) and stages each
// record's payload itself with asynchronous device-to-host copies, host
// b's bridge places every message once into host b's shared GPU pool, and
// the subscriber reads it there through a device pointer. Several
// messages are in flight at once, of odd sizes and many chunks (16 MiB
// records: more chunks than staging slots), each byte checked.
func TestGPUAcrossHosts(t *testing.T) {
	a, b := pair(t, "fabric:tcp", func(o *Options) { o.RingSize = 32 << 20; o.Engine.PoolSize = 256 << 20 })
	cpb := requireGPU(t, b.Domain())
	cpa := requireGPU(t, a.Domain())
	const most = 64 << 20
	bufa, bufb := hostBuffer(t, a.Domain(), most), hostBuffer(t, b.Domain(), most)
	q := reliable()
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/gpu/frames", Type: "sensor_msgs/msg/Image", Node: "/l", QoS: q, Memory: zerocopy.MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/gpu/frames", Type: "sensor_msgs/msg/Image", Node: "/t", QoS: q, Memory: zerocopy.MemoryGPU})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	testutil.Eventually(t, 20*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
	sizes := []int{4 << 20, 1000, 64 << 20, 4 << 20, 20<<20 + 5, 3<<20 + 13, 1}
	for i, n := range sizes {
		l, err := pub.LoanDevice(n)
		if err != nil {
			t.Fatal(err)
		}
		copy(bufa, stagedMsg(i, n))
		if _, err := cpa.CopyIn(l, 0, bufa[:n]); err != nil {
			t.Fatal(err)
		}
		if err := l.SetMeta(metaOf(i)); err != nil {
			t.Fatal(err)
		}
		if err := l.Publish(); err != nil { // waits for the copy: bufa is free again
			t.Fatal(err)
		}
	}
	for i, n := range sizes {
		smp, err := sub.TakeWait(30 * time.Second)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if smp.Bytes() != nil {
			t.Fatalf("message %d: a GPU reader's sample has host bytes (a host copy was made)", i)
		}
		got := bufb[:smp.Size()]
		c, err := cpb.StageOut(got, smp, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		if err := checkMeta(smp, metaOf(i), i); err != nil {
			t.Fatal(err)
		}
		smp.Return()
		if want := stagedMsg(i, n); !bytes.Equal(got, want) {
			k := 0
			for k < min(len(got), len(want)) && got[k] == want[k] {
				k++
			}
			t.Fatalf("message %d: %d bytes on the device, want %d; first difference at byte %d", i, len(got), n, k)
		}
	}
	for host, br := range map[string]*Bridge{"a": a, "b": b} {
		eps, err := br.Domain().Endpoints("/gpu/frames")
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			if e.Path != "gpu-pool" {
				t.Errorf("host %s endpoint (bridge %v, %v) uses %s, want gpu-pool (no host copy)", host, e.Republish, e.Kind, e.Path)
			}
		}
	}
	var wrote bool
	for _, p := range a.Status().Peers {
		for _, l := range p.Links {
			if l.Role == "writer" && l.Messages+l.Records > 0 {
				wrote = true
				t.Logf("writer ring %d: %d messages, %d records, %d bytes", l.Ring, l.Messages, l.Records, l.Bytes)
			}
		}
	}
	if !wrote {
		t.Error("host a's writer reports nothing written")
	}
}

// hostCopier stands in for the GPU's staging copies (stageHook): it copies
// a sample's host bytes into the slot when started and reports the copy
// done only after a few polls, so that the publish side's staging pipeline
// (slots in ring order, posts after the copy, reuse after the write,
// resends after a link failure, best-effort drops) runs without a GPU.
type hostCopier struct {
	polls  []int
	copies *atomic.Int64
}

func (c *hostCopier) start(i int, dst []byte, smp *zerocopy.Sample, off uint64) error {
	src := smp.Bytes()
	if src == nil || off+uint64(len(dst)) > uint64(len(src)) {
		return fmt.Errorf("hostCopier: %d bytes at %d of a %d-byte sample", len(dst), off, len(src))
	}
	copy(dst, src[off:])
	c.polls[i] = 2
	c.copies.Add(1)
	return nil
}

func (c *hostCopier) done(i int) (bool, error) {
	if c.polls[i] > 0 {
		c.polls[i]--
		return false, nil
	}
	return true, nil
}

func (c *hostCopier) wait() error { clear(c.polls); return nil }
func (c *hostCopier) close()      {}

// withStaging makes every link of the test stage its payloads through
// hostCopier; it returns the count of staging copies.
func withStaging(t *testing.T) *atomic.Int64 {
	n := new(atomic.Int64)
	stageHook = func(slots int) stageCopier { return &hostCopier{polls: make([]int, slots), copies: n} }
	t.Cleanup(func() { stageHook = nil }) // registered first: runs after the bridges closed
	return n
}

// stagedMsg is message i of the staging tests: its index, then bytes that
// depend on i and the position.
func stagedMsg(i, n int) []byte {
	b := make([]byte, n)
	for k := range b {
		b[k] = byte(i*31 + k*7 + k>>9)
	}
	if n >= 4 {
		binary.LittleEndian.PutUint32(b, uint32(i))
	}
	return b
}

// dropWriterLinks fails br's data links from the writer's side: the reader
// sees the endpoint close, tells the writer (already down) and offers its
// ring again; the writer rewinds to the reader's Head and resends.
func dropWriterLinks(br *Bridge) {
	br.mu.Lock()
	var ls []*writerLink
	for _, p := range br.peers {
		for _, l := range p.writers {
			ls = append(ls, l)
		}
	}
	br.mu.Unlock()
	for _, l := range ls {
		l.linkDown("test: data link dropped", 0)
	}
}

// dropReaderLinks fails br's data links from the reader's side.
func dropReaderLinks(br *Bridge) {
	br.mu.Lock()
	var ls []*readerLink
	for _, p := range br.peers {
		for _, l := range p.readers {
			ls = append(ls, l)
		}
	}
	br.mu.Unlock()
	for _, l := range ls {
		l.linkDown("test: data link dropped", 0)
	}
}

// The staged publish path without a GPU: records of many sizes (odd ones,
// one-chunk and many-chunk, more in flight than staging slots), two in
// three with meta (records of meta only, of meta and payload, of payload
// only), arrive intact and in order, also across data-link failures
// (resent records are staged again), in both ring modes.
func TestStagedPayloads(t *testing.T) {
	for _, c := range []struct {
		prov string
		mode ring.Mode
		wm   ring.Watermark
	}{{"tcp", ring.WriteImm, ring.EveryRecord}, {"fabric:tcp", ring.WriteImm, ring.Half}, {"tcp", ring.WriteTwice, ring.Half}} {
		t.Run(c.prov+"/"+c.mode.String()+"/"+c.wm.String(), func(t *testing.T) {
			copies := withStaging(t)
			a, b := pair(t, c.prov, func(o *Options) { o.RingSize, o.MaxChunk, o.Mode, o.Watermark = 1<<20, 64<<10, c.mode, c.wm })
			q := reliable()
			sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/staged", Type: "std_msgs/msg/String", Node: "/l", QoS: q})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Close()
			pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/staged", Type: "std_msgs/msg/String", Node: "/t", QoS: q})
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			testutil.Eventually(t, 10*time.Second, "the bridge subscription matches", func() bool { return pub.Matched() > 0 })
			sizes := []int{1000, 64 << 10, 64<<10 + 1, 200<<10 + 7, 1, 4096, 130 << 10, 63}
			const count = 240
			errc := make(chan error, 1)
			stop := make(chan struct{})
			dropped := make(chan struct{})
			go func() { // data-link failures while records are in flight
				defer close(dropped)
				if c.prov == "fabric:tcp" {
					// Not over libfabric tcp in this process: about one
					// reconnection in ten after a drop, its connection
					// manager takes a connection it never reports (the
					// dial times out after 10 s) and keeps that socket
					// open for the life of the process, which the leak
					// check then finds (docs/ARCHITECTURE.md §6). Drops
					// over libfabric are covered between processes by
					// TestTwoHostsLinkFlap, and the staged resends by the
					// plain-TCP cases here.
					return
				}
				for k := range 8 {
					select {
					case <-stop:
						return
					case <-time.After(10 * time.Millisecond):
					}
					if k%2 == 0 {
						dropWriterLinks(a)
					} else {
						dropReaderLinks(b) // the other side's failure notes cross it
					}
				}
			}()
			go func() {
				for i := range count {
					if err := publishWithMeta(pub, stagedMsg(i, sizes[i%len(sizes)]), metaOf(i)); err != nil {
						errc <- fmt.Errorf("publish %d: %w", i, err)
						return
					}
				}
				errc <- nil
			}()
			for i := range count {
				smp, err := sub.TakeWait(20 * time.Second)
				if err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
				want := stagedMsg(i, sizes[i%len(sizes)])
				if !bytes.Equal(smp.Bytes(), want) {
					got := -1
					if smp.Size() >= 4 {
						got = int(binary.LittleEndian.Uint32(smp.Bytes()))
					}
					t.Fatalf("message %d: got %d bytes (index %d), want %d", i, smp.Size(), got, len(want))
				}
				if err := checkMeta(smp, metaOf(i), i); err != nil {
					t.Fatal(err)
				}
				smp.Return()
			}
			close(stop)
			<-dropped
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if smp, err := sub.TakeWait(200 * time.Millisecond); err == nil {
				t.Fatalf("an extra message of %d bytes", smp.Size())
			}
			var resent, failures uint64
			for _, p := range a.Status().Peers {
				for _, l := range p.Links {
					resent += l.Resent
					failures += l.Failures
				}
			}
			t.Logf("%d staging copies, writer failures %d, records resent %d", copies.Load(), failures, resent)
			if copies.Load() < count {
				t.Errorf("%d staging copies for %d messages", copies.Load(), count)
			}
		})
	}
}

// BEST_EFFORT on the staged path: messages that find the ring full are
// dropped before their first chunk (their staged chunks given back), the
// rest arrive intact and in order.
func TestStagedBestEffortDrops(t *testing.T) {
	withStaging(t)
	a, b := pair(t, "tcp", func(o *Options) { o.RingSize, o.MaxChunk = 256<<10, 16<<10 })
	q := qos.Profile{History: qos.HistoryKeepLast, Depth: 100, Reliability: qos.ReliabilityBestEffort}
	sub, err := b.Domain().NewSubscription(zerocopy.EndpointSpec{Topic: "/be", Type: "std_msgs/msg/String", Node: "/l", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	pub, err := a.Domain().NewPublisher(zerocopy.EndpointSpec{Topic: "/be", Type: "std_msgs/msg/String", Node: "/t", QoS: q})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	testutil.Eventually(t, 10*time.Second, "matched", func() bool { return pub.Matched() > 0 })
	const n = 400
	for i := range n {
		if err := pub.Publish(stagedMsg(i, 60<<10)); err != nil {
			t.Fatal(err)
		}
	}
	last := -1
	got := 0
	for {
		smp, err := sub.TakeWait(2 * time.Second)
		if err != nil {
			break
		}
		i := int(binary.LittleEndian.Uint32(smp.Bytes()))
		if i <= last || !bytes.Equal(smp.Bytes(), stagedMsg(i, 60<<10)) {
			t.Fatalf("message %d after %d, or corrupt", i, last)
		}
		last = i
		got++
		smp.Return()
	}
	// Best effort with KEEP_LAST(100) may lose messages at three places,
	// each counted: the bridge's subscription on a (its queue overwritten),
	// the links (a full ring), and b's subscription. Nothing is lost
	// without a count.
	var dropped uint64
	for _, br := range []*Bridge{a, b} {
		for _, p := range br.Status().Peers {
			for _, l := range p.Links {
				dropped += l.Dropped
			}
		}
	}
	eps, err := a.Domain().Endpoints("/be")
	if err != nil {
		t.Fatal(err)
	}
	var lostA uint64
	for _, ep := range eps {
		if ep.Republish && ep.Kind == zerocopy.KindSubscription {
			lostA += ep.Lost
		}
	}
	lostB := sub.Lost()
	t.Logf("received %d of %d; lost at a's bridge subscription %d, dropped by links %d, lost at b's subscription %d", got, n, lostA, dropped, lostB)
	if got == 0 || uint64(got)+lostA+dropped+lostB != n {
		t.Errorf("received %d of %d, but counted losses are %d + %d + %d", got, n, lostA, dropped, lostB)
	}
}

package bridge

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// readerRing is the memory of br's reader link's ring (nil: none yet).
func readerRing(br *Bridge) []byte {
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, p := range br.peers {
		for _, l := range p.readers {
			if l.railsNow.Load() != nil {
				return l.mem.Bytes()[:l.cfg.Size] // the link is up: mem is set and stays
			}
		}
	}
	return nil
}

// resident is the number of b's pages in memory, from /proc/self/pagemap
// (bit 63 of a page's entry: present).
func resident(t *testing.T, b []byte) int {
	t.Helper()
	var addr uintptr
	if _, err := fmt.Sscanf(fmt.Sprintf("%p", &b[0]), "0x%x", &addr); err != nil {
		t.Fatal(err)
	}
	page := uintptr(os.Getpagesize())
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no pagemap: %v", err)
	}
	defer f.Close()
	ents := make([]byte, 8*((uintptr(len(b))+page-1)/page))
	if _, err := f.ReadAt(ents, int64(addr/page*8)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; i < len(ents); i += 8 {
		if binary.LittleEndian.Uint64(ents[i:])&(1<<63) != 0 {
			n++
		}
	}
	return n
}

// The ring a daemon reads is faulted in as records land in it, not at
// link-up: after a few small messages most of it is not resident; the
// pages a burst wrote are; once a stream has passed the first step, the
// rest is faulted in ahead of it.
func TestRingFaultedLazily(t *testing.T) {
	for _, prov := range []string{"tcp", "fabric:tcp"} {
		t.Run(prov, func(t *testing.T) {
			a, b := pair(t, prov, func(o *Options) { o.RingSize = 8 << 20 })
			sub, pub := endpoints(t, a, b, "/lazy", reliable())
			send := func(n, size int) {
				t.Helper()
				for i := 0; i < n; i++ {
					if err := pub.Publish(bytes.Repeat([]byte{byte(i)}, size)); err != nil {
						t.Fatal(err)
					}
					smp, err := sub.TakeWait(20 * time.Second)
					if err != nil {
						t.Fatal(err)
					}
					smp.Return()
				}
			}
			send(10, 100)
			ring := readerRing(b)
			if ring == nil {
				t.Fatal("no reader link is up")
			}
			pages := len(ring) / os.Getpagesize()
			if n := resident(t, ring); n > pages/4 {
				t.Errorf("after ten small messages %d of the ring's %d pages are resident", n, pages)
			}
			send(8, 512<<10) // 4 MiB through the ring
			if n := resident(t, ring); n < (4<<20)/os.Getpagesize() {
				t.Errorf("after 4 MiB went through the ring only %d of its pages are resident", n)
			}
			// A stream past the first step has the ring faulted in ahead
			// of it (populateAhead), up to its end.
			send(4, 512<<10)
			testutil.Eventually(t, 20*time.Second, "the ring is faulted in ahead of a stream", func() bool {
				return resident(t, ring) == pages
			})
		})
	}
}

// A daemon whose readers use no GPU never looks for CUDA: not at
// link-up (the ring is pinned only for device deliveries), not for host
// messages.
func TestNoCUDAWithoutGPUTopics(t *testing.T) {
	a, b := pair(t, "fabric:tcp", nil)
	exchange(t, a, b, "/host_only", reliable(), []int{64, 300 << 10, 5})
	testutil.Eventually(t, 10*time.Second, "the reader link is up", func() bool { return readerRing(b) != nil })
	for i, br := range []*Bridge{a, b} {
		if br.Domain().GPUTried() {
			t.Errorf("bridge %c looked for CUDA without any GPU topic", 'a'+i)
		}
	}
}

// After a burst of control-plane work the bridge returns its free heap
// to the system once the control plane is quiet (here with no minimum,
// so any work triggers it).
func TestTrimAfterBurst(t *testing.T) {
	old := trimMin
	trimMin = 0
	t.Cleanup(func() { trimMin = old })
	a, b := pair(t, "tcp", nil)
	for k := 0; k < 5; k++ {
		endpoints(t, a, b, fmt.Sprintf("/burst%d", k), reliable())
	}
	testutil.Eventually(t, 20*time.Second, "both bridges trimmed", func() bool {
		return a.trims.Load() > 0 && b.trims.Load() > 0
	})
}

package bridge

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// metaOf is the meta block of message i of the meta tests: none for every
// third, else 1 … MaxMeta bytes that depend on i (the largest span two
// 64 KiB chunks with the prefix, and many of the small chunks used here).
func metaOf(i int) []byte {
	if i%3 == 0 {
		return nil
	}
	sizes := []int{1, 37, 4096, 40000, zerocopy.MaxMeta, 64}
	b := make([]byte, sizes[i%len(sizes)])
	for k := range b {
		b[k] = byte(i*13 + k*5 + k>>8)
	}
	return b
}

// publishWithMeta publishes data with meta (none when nil) through a loan.
func publishWithMeta(pub *zerocopy.Publisher, data, meta []byte) error {
	l, err := pub.Loan(len(data))
	if err != nil {
		return err
	}
	copy(l.Bytes(), data)
	if err := l.SetMeta(meta); err != nil {
		l.Discard()
		return err
	}
	return l.Publish()
}

// checkMeta reports a sample whose meta is not want.
func checkMeta(smp *zerocopy.Sample, want []byte, i int) error {
	if got := smp.Meta(); !bytes.Equal(got, want) || (want == nil) != (got == nil) {
		return fmt.Errorf("message %d: meta of %d bytes, want %d", i, len(got), len(want))
	}
	return nil
}

// Messages with meta cross hosts intact: meta and payload of every size,
// chunk boundaries inside the meta, at its end and in the payload, in both
// ring modes and over plain TCP and libfabric.
func TestMetaAcrossHosts(t *testing.T) {
	for _, prov := range []string{"tcp", "fabric:tcp"} {
		for _, mode := range []ring.Mode{ring.WriteImm, ring.WriteTwice} {
			t.Run(prov+"/"+mode.String(), func(t *testing.T) {
				a, b := pair(t, prov, func(o *Options) { o.Mode = mode; o.RingSize, o.MaxChunk = 1<<20, 4<<10 })
				sub, pub := endpoints(t, a, b, "/meta", reliable())
				sizes := []int{1, 100, 4092, 4096, 50000, 3}
				const count = 36
				for i := range count {
					if err := publishWithMeta(pub, stagedMsg(i, sizes[i%len(sizes)]), metaOf(i)); err != nil {
						t.Fatal(err)
					}
				}
				for i := range count {
					smp, err := sub.TakeWait(10 * time.Second)
					if err != nil {
						t.Fatalf("message %d: %v", i, err)
					}
					if !bytes.Equal(smp.Bytes(), stagedMsg(i, sizes[i%len(sizes)])) {
						t.Fatalf("message %d: %d payload bytes differ", i, smp.Size())
					}
					if err := checkMeta(smp, metaOf(i), i); err != nil {
						t.Fatal(err)
					}
					smp.Return()
				}
			})
		}
	}
}

// A publisher that leaves right after publishing: the messages its host's
// bridge subscription still holds cross all the same (the topic is no
// longer wanted once the publisher is gone, and the link drains it before
// closing it), in order and intact.
func TestPublisherLeavesBeforeItsMessagesCrossed(t *testing.T) {
	a, b := pair(t, "tcp", func(o *Options) { o.RingSize, o.MaxChunk = 1<<20, 64<<10 })
	sub, pub := endpoints(t, a, b, "/leaving", reliable())
	const count, size = 60, 200 << 10 // 12 MiB through a 1 MiB ring: most of it queued at Close
	for i := range count {
		if err := publishWithMeta(pub, stagedMsg(i, size), metaOf(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range count {
		smp, err := sub.TakeWait(20 * time.Second)
		if err != nil {
			t.Fatalf("message %d of %d after the publisher left: %v", i, count, err)
		}
		if !bytes.Equal(smp.Bytes(), stagedMsg(i, size)) {
			t.Fatalf("message %d: payload differs", i)
		}
		if err := checkMeta(smp, metaOf(i), i); err != nil {
			t.Fatal(err)
		}
		smp.Return()
	}
}

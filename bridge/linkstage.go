package bridge

import (
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Staging of device payloads.
//
// A GPU topic's bridge subscription reads the device form, so the
// publisher returns without a host copy, and the link makes the copy
// itself, record by record: the payload of each record is copied from the
// sample's device memory (at the chunk's offset) into one of K slots of
// registered, pinned host memory with an asynchronous device-to-host copy
// queued on the link's engine copier (zerocopy.Copier.StageOut: the engine
// owns the stream and the events); the record is posted (header, then the
// payload from the slot) once that copy's completion is done, in ring
// order. So the copy of chunk k+1 runs while chunk k is on the
// wire (and the reader places chunk k−1). Slots are handed out in ring
// order; a slot is reused only after the write posted from it completed
// locally (the endpoint's completions reached its writes count at post
// time), and after a reconnect every slot is free and whatever is to be
// written again is staged again from the still-held sample.
//
// K: a slot holds one record's payload (Config.MaxChunk, page-rounded).
// K = 8 for chunks up to 8 MiB (16 MiB of pinned memory with the 2 MiB
// records of the benchmark): the device-to-host copy (≈ 50 GB/s) is
// several times faster than the wire, so the copies stay ahead and up
// to K−1 payload writes can be in flight while the next one is staged,
// which keeps a software provider (that moves bytes only while polled)
// and a NIC busy back to back. Larger records get fewer slots, at least
// 2 (one on the wire, one being staged), within stageBudget.
const (
	stageBudget = 64 << 20 // pinned bytes per link, at most (unless 2 slots need more)
	stageMax    = 8
	stageMin    = 2
)

// Staging slot states.
const (
	slotFree   = iota
	slotStaged // holding (or being copied) the payload of a record not yet posted
	slotPosted // its record was posted: free once doneAt writes completed
)

type stageSlot struct {
	buf    []byte
	state  int
	rail   int    // slotPosted: the rail its record went on
	doneAt uint64 // slotPosted: the rail's write count after posting from it
}

// staging is a link's staging memory: K slots in one registered region,
// pinned for the GPU, and the copier that fills them.
type staging struct {
	reg   transport.Region
	unpin func() error
	cp    stageCopier
	slots []stageSlot
	size  uint64 // bytes per slot
	next  int    // next slot to hand out: slots are used in ring order
}

// stageCopier queues copies of sample payload bytes into staging slots and
// reports when they are done: the engine's (engineCopier) or a test's.
type stageCopier interface {
	// start queues the copy of len(dst) bytes at offset off of smp's
	// payload into dst, slot i's memory, and marks slot i behind it.
	start(i int, dst []byte, smp *zerocopy.Sample, off uint64) error
	// done reports whether slot i's latest copy completed.
	done(i int) (bool, error)
	// wait waits for every copy queued.
	wait() error
	close()
}

// stageHook, when set (tests only), replaces the GPU copier and makes every
// topic's payloads go through staging.
var stageHook func(slots int) stageCopier

// stages reports whether a sample's payload is staged: the subscription
// reads the device form and the sample has no host copy to send from
// (local host readers made the engine stage one).
func stages(ot *outTopic, smp *zerocopy.Sample) bool {
	return ot.gpu && (smp.Bytes() == nil || ot.reg == nil || stageHook != nil)
}

func stageSlotSize(cfg ring.Config) uint64 {
	return max((cfg.MaxChunk+4095)&^4095, 4096)
}

// prepareStaging sets staging up ahead of the first device message, when
// the link is connected and carries a GPU topic.
func (l *writerLink) prepareStaging() {
	if l.stg != nil || l.w == nil {
		return
	}
	for _, ot := range l.topics {
		if ot.gpu {
			if err := l.ensureStaging(); err != nil {
				l.b.log.Warn("staging memory for device payloads", "peer", l.host, "ring", l.id, "err", err)
			}
			return
		}
	}
}

// ensureStaging allocates the staging slots for the current ring
// configuration.
func (l *writerLink) ensureStaging() error {
	if l.stg != nil {
		return nil
	}
	size := stageSlotSize(l.cfg)
	k := min(max(stageBudget/size, stageMin), stageMax)
	reg, err := l.b.prov.Alloc(int(k * size))
	if err != nil {
		return fmt.Errorf("registering staging memory: %w", err)
	}
	st := &staging{reg: reg, size: size, slots: make([]stageSlot, k)}
	mem := reg.Bytes()
	for i := range st.slots {
		st.slots[i].buf = mem[uint64(i)*size : uint64(i+1)*size : uint64(i+1)*size]
	}
	if stageHook != nil {
		st.cp = stageHook(int(k))
	} else {
		cp, err := l.b.dom.NewCopier()
		if err != nil {
			reg.Close()
			return err
		}
		if unpin, err := l.b.dom.PinHost(mem[:k*size]); err != nil {
			l.b.log.Warn("staging memory not pinned: device copies run at pageable speed", "peer", l.host, "ring", l.id, "err", err)
		} else {
			st.unpin = unpin
		}
		st.cp = &engineCopier{cp: cp, slots: make([]*zerocopy.Completion, k)}
	}
	l.stg = st
	l.b.log.Info("staging device payloads", "peer", l.host, "ring", l.id, "slots", k, "slot_bytes", size)
	return nil
}

// resetStaging frees every slot (the endpoint their writes were posted on
// is closed) and forgets what was staged: it is staged again.
func (l *writerLink) resetStaging() {
	for i := l.fh; i < len(l.fl); i++ {
		l.fl[i].slot = 0
	}
	l.pend = l.pend[:0]
	if l.cur != nil {
		l.cur.staged = l.cur.next
	}
	if l.stg != nil {
		for i := range l.stg.slots {
			l.stg.slots[i].state = slotFree
		}
		l.stg.next = 0
	}
}

// dropStaging releases the staging memory; no endpoint may use it.
func (l *writerLink) dropStaging() {
	st := l.stg
	if st == nil {
		return
	}
	l.resetStaging()
	st.cp.close()
	if st.unpin != nil {
		if err := st.unpin(); err != nil {
			l.b.log.Warn("unpinning staging memory", "peer", l.host, "ring", l.id, "err", err)
		}
	}
	st.reg.Close()
	l.stg = nil
}

// stage starts the copy of f's payload into the next slot; false: every
// slot is busy.
func (l *writerLink) stage(f *flight) (bool, error) {
	st := l.stg
	i := st.next
	s := &st.slots[i]
	switch s.state {
	case slotStaged:
		return false, nil
	case slotPosted:
		if !l.rails.done(s.rail, s.doneAt) {
			l.needCompl = true // woken when it completes
			return false, nil
		}
	}
	off, n := f.dataSpan()
	if err := st.cp.start(i, s.buf[:n], f.smp, off); err != nil {
		return false, fmt.Errorf("topic %s: staging chunk %d: %w", f.ot.name, f.hdr.Chunk, err)
	}
	s.state = slotStaged
	st.next = (i + 1) % len(st.slots)
	f.slot = i + 1
	return true, nil
}

// stageAhead starts staging copies, in ring order, for the records to
// write again and then the current message's next chunks, as far as
// slots are free.
func (l *writerLink) stageAhead() error {
	if l.ss < l.rs {
		l.ss = l.rs
	}
	for ; l.ss < len(l.fl); l.ss++ {
		f := &l.fl[l.ss]
		if f.slot != 0 || !f.needsStage() {
			continue
		}
		if err := l.ensureStaging(); err != nil {
			return err
		}
		if ok, err := l.stage(f); err != nil || !ok {
			return err
		}
	}
	m := l.cur
	if m == nil || !m.stage {
		return nil
	}
	if err := l.ensureStaging(); err != nil {
		return err
	}
	for m.staged < m.chunks {
		f := l.chunkFlight(m, m.staged)
		// A chunk of meta only has nothing to copy, but keeps its place
		// in the order of the chunks to post.
		if f.needsStage() {
			if ok, err := l.stage(&f); err != nil || !ok {
				return err
			}
		}
		l.pend = append(l.pend, f)
		m.staged++
	}
	return nil
}

// payloadReady reports whether f can be posted: its payload is in the
// pool, or staged and its copy done (or it carries meta only).
func (l *writerLink) payloadReady(f *flight) (bool, error) {
	if f.slot == 0 {
		return !f.needsStage(), nil
	}
	return l.stg.cp.done(f.slot - 1)
}

// unstage gives back the slots of the current message's staged chunks (it
// is dropped), once their copies, which read its sample, are done.
func (l *writerLink) unstage() {
	if len(l.pend) > 0 {
		if err := l.stg.cp.wait(); err != nil {
			l.b.log.Error("waiting for staging copies", "peer", l.host, "ring", l.id, "err", err)
		}
		// They are the latest slots handed out: hand them out again next.
		first := true
		for _, f := range l.pend {
			if f.slot == 0 {
				continue // meta only
			}
			if first {
				l.stg.next, first = f.slot-1, false
			}
			l.stg.slots[f.slot-1].state = slotFree
		}
		l.pend = l.pend[:0]
	}
	if l.cur != nil {
		l.cur.staged = l.cur.next
	}
}

// engineCopier stages payloads with the engine's copier, keeping each
// slot's latest completion.
type engineCopier struct {
	cp    *zerocopy.Copier
	slots []*zerocopy.Completion
}

func (c *engineCopier) start(i int, dst []byte, smp *zerocopy.Sample, off uint64) error {
	x, err := c.cp.StageOut(dst, smp, int(off))
	if err != nil {
		return err
	}
	c.slots[i] = x
	return nil
}

func (c *engineCopier) done(i int) (bool, error) {
	x := c.slots[i]
	if !x.Done() {
		return false, nil
	}
	return true, x.Wait()
}

// wait waits for the copies of every slot: a copier's copies complete in
// order, but the slots' latest are not the last queued in slot order.
func (c *engineCopier) wait() error {
	var first error
	for _, x := range c.slots {
		if err := x.Wait(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *engineCopier) close() { c.cp.Close() }

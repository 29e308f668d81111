package zerocopy

import (
	"errors"
	"fmt"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/tlsf"
)

// All functions in this file must be called with the topic lock held. They
// keep one invariant that repair relies on: a sample's refs equals the number
// of ring entries (subscription queues and publisher histories, between head
// and tail) plus held entries that name it, plus one while a subscription's
// take moves it from its ring to a held entry (its head word's takingBit and
// eTakeN, take.go: the one change made without the lock), and a sample
// with refs 0 is free. Every change adds the new reference before it drops
// an old one, so a process that dies between two steps leaves at worst an
// extra reference, which repair recounts.

// newSample allocates a block of size bytes and a sample record for it,
// loaned to slot: in the device pool when dev is set and the topic has one,
// in the host pool otherwise. It returns ErrPoolExhausted, ErrTooLarge or
// ErrTooManyLoans.
func (t *Topic) newSample(slot uint32, size uint64, dev bool) (uint32, error) {
	j, err := t.freeHeld(slot)
	if err != nil {
		return 0, err
	}
	head := t.u32(hFreeSample)
	n, made := head.Load(), t.samplesMade()
	fresh := n == 0
	if fresh {
		// The free list is empty: make the next record, committing its
		// page when it starts one. hSamplesMade is raised only once the
		// sample has its block, so a failure below leaves no record behind.
		if made >= t.lay.maxSamples {
			return 0, fmt.Errorf("%w: all %d sample records in use", ErrPoolExhausted, t.lay.maxSamples)
		}
		n = made + 1
		if off := t.sampleOff(n); off%pageSize < sampleStride {
			if err := t.seg.Commit(off, sampleStride); err != nil {
				return 0, fmt.Errorf("%w: topic %s: %w", ErrPoolExhausted, t.name, err)
			}
		}
	} else if n > made {
		return 0, t.markCorrupt("the free sample list names sample %d, only %d exist", n, made)
	}
	so := t.sampleOff(n)
	if !fresh {
		if st := sampleState(t.u32(so + sState).Load()); st != sampleFree {
			// A cycle in the free list, or a damaged link: lending it would
			// give one record to two owners.
			return 0, t.markCorrupt("the free sample list names sample %d, which is in state %d", n, st)
		}
	}
	t.set32(so+sBlock, 0)
	t.set32(so+sDevBlock, 0)
	t.clearMeta(n)
	if err := t.addBlock(n, dev && t.dalloc != nil, size); err != nil {
		return 0, err
	}
	if fresh {
		t.u32(hSamplesMade).Store(n)
	} else {
		t.set32(hFreeSample, t.u32(so+sNext).Load())
	}
	t.set32(so+sState, uint32(sampleLoaned))
	t.set32(so+sRefs, 1)
	t.set64(so+sSize, size)
	t.set32(so+sPubSlot, slot)
	t.set32(hUsedSamples, t.u32(hUsedSamples).Load()+1)
	t.heldWord(slot, j).Store(n)
	t.u32(t.slotOff(slot) + eHeld).Add(1)
	return n, nil
}

// addBlock gives sample n a block of size bytes in the device pool (dev) or
// the host pool.
func (t *Topic) addBlock(n uint32, dev bool, size uint64) error {
	b, err := t.allocBlock(dev, size)
	if err != nil {
		return err
	}
	t.nameBlock(n, dev, b)
	return nil
}

// nameBlock records b as sample n's block of one form: the offset first,
// then the block index with an atomic store, so a lock-free take
// (take.go) that sees the index also sees the offset.
func (t *Topic) nameBlock(n uint32, dev bool, b tlsf.Block) {
	blockF, offF := uint64(sBlock), uint64(sOffset)
	if dev {
		blockF, offF = sDevBlock, sDevOffset
	}
	so := t.sampleOff(n)
	t.set64(so+offF, b.Offset)
	t.u32(so + blockF).Store(b.Index)
}

// formHook, when set (tests), runs in addForm between the block's
// allocation and the copy into it.
var formHook func(n uint32)

// addForm gives sample n, which rings already hold, its other form (dev:
// a device copy of its host bytes, else a host copy of its device bytes):
// the block is filled before it is named in the record, so a lock-free
// take that reads the record meanwhile sees the sample without the form,
// never a form being filled or one freed after a failed copy. A failure
// frees the block unnamed; a holder that dies in between leaves a block
// no record names, which repair frees. Must hold the lock.
func (t *Topic) addForm(n uint32, dev bool) error {
	b, err := t.allocBlock(dev, t.u64(t.sampleOff(n)+sSize).Load())
	if err != nil {
		return err
	}
	if formHook != nil {
		formHook(n)
	}
	if err := t.copyFormAt(n, dev, true, b.Offset); err != nil {
		a := t.alloc
		if dev {
			a = t.dalloc
		}
		if ferr := a.Free(b.Index); ferr != nil {
			t.markCorrupt("freeing block %d: %v", b.Index, ferr)
		}
		return err
	}
	t.nameBlock(n, dev, b)
	return nil
}

// allocBlock allocates size bytes of the device pool (dev) or of the host
// pool, committing what the host block covers: ErrPoolExhausted, ErrTooLarge
// or ErrCorrupt (a damaged allocator) otherwise.
func (t *Topic) allocBlock(dev bool, size uint64) (tlsf.Block, error) {
	a, poolSize, what := t.alloc, t.lay.poolSize, "host"
	if dev {
		a, poolSize, what = t.dalloc, t.lay.devPoolSize, "device"
	}
	if err := t.commitMeta(dev); err != nil {
		return tlsf.Block{}, fmt.Errorf("%w: %w", ErrPoolExhausted, err)
	}
	b, err := a.Alloc(size, 0)
	switch {
	case errors.Is(err, tlsf.ErrTooLarge):
		return b, fmt.Errorf("%w: %d bytes asked, the %s pool of topic %s has %d", ErrTooLarge, size, what, t.name, poolSize)
	case errors.Is(err, tlsf.ErrNoSpace), errors.Is(err, tlsf.ErrNoDescriptors):
		st := a.Stats()
		return b, fmt.Errorf("%w: %d bytes asked, %d of %d free in the %s pool, largest free block %d", ErrPoolExhausted, size, st.FreeBytes, st.PoolSize, what, st.LargestFree)
	case errors.Is(err, tlsf.ErrCorrupt) || errors.Is(err, tlsf.ErrBadFree):
		return b, t.markCorrupt("%s pool allocator: %v", what, err)
	case err != nil:
		return b, fmt.Errorf("allocating %d bytes: %w", size, err)
	}
	if b.Offset > poolSize || size > poolSize-b.Offset || size > b.Size {
		return b, t.markCorrupt("%s pool allocator lent %d bytes at offset %d for %d asked, in a %d-byte pool", what, b.Size, b.Offset, size, poolSize)
	}
	if !dev {
		// Lend only committed bytes: a block past the committed prefix
		// commits up to its end first (the commit rule in layout.go).
		if err := t.commitPool(b.Offset + b.Size); err != nil {
			a.Free(b.Index)
			return b, fmt.Errorf("%w: %d bytes asked: %w", ErrPoolExhausted, size, err)
		}
	}
	return b, nil
}

// dropBlock gives back sample n's block of one form.
func (t *Topic) dropBlock(n uint32, dev bool) {
	so := t.sampleOff(n)
	a, f := t.alloc, uint64(sBlock)
	if dev {
		a, f = t.dalloc, sDevBlock
	}
	if b := t.u32(so + f).Swap(0); b != 0 {
		if err := a.Free(b); err != nil {
			t.markCorrupt("freeing block %d: %v", b, err)
		}
	}
}

// freeHeld finds an empty held entry of slot.
func (t *Topic) freeHeld(slot uint32) (uint32, error) {
	if t.u32(t.slotOff(slot)+eHeld).Load() >= t.lay.heldCap {
		used := uint32(0)
		for j := uint32(0); j < t.lay.heldCap; j++ {
			if t.heldWord(slot, j).Load() != 0 {
				used++
			}
		}
		if used < t.lay.heldCap {
			return 0, t.markCorrupt("endpoint %d: held count %d, %d entries in use", slot, t.u32(t.slotOff(slot)+eHeld).Load(), used)
		}
		return 0, fmt.Errorf("%w: the endpoint holds %d samples", ErrTooManyLoans, t.lay.heldCap)
	}
	for j := uint32(0); j < t.lay.heldCap; j++ {
		if t.heldWord(slot, j).Load() == 0 {
			return j, nil
		}
	}
	return 0, t.markCorrupt("endpoint %d: held count disagrees with its held entries", slot)
}

// addHeld records that slot holds sample n (the caller has counted the ref).
func (t *Topic) addHeld(slot, n uint32) error {
	j, err := t.freeHeld(slot)
	if err != nil {
		return err
	}
	t.heldWord(slot, j).Store(n)
	t.u32(t.slotOff(slot) + eHeld).Add(1)
	return nil
}

// dropHeld removes sample n from slot's held entries without touching refs.
func (t *Topic) dropHeld(slot, n uint32) bool {
	for j := uint32(0); j < t.lay.heldCap; j++ {
		if w := t.heldWord(slot, j); w.Load() == n {
			w.Store(0)
			t.u32(t.slotOff(slot) + eHeld).Add(^uint32(0))
			return true
		}
	}
	return false
}

// unref drops one reference to sample n and frees it on the last.
func (t *Topic) unref(n uint32) {
	if !t.validSample(n) {
		return
	}
	so := t.sampleOff(n)
	if refs := t.u32(so + sRefs).Load(); refs > 1 {
		t.set32(so+sRefs, refs-1)
		return
	}
	t.freeSample(n)
}

func (t *Topic) freeSample(n uint32) {
	so := t.sampleOff(n)
	if sampleState(t.u32(so+sState).Load()) == sampleFree {
		return
	}
	// The blocks go back before the record: a death in between leaves a
	// record naming a free block, which repair drops.
	if b := t.u32(so + sBlock).Load(); b != 0 {
		if err := t.alloc.Free(b); err != nil {
			t.markCorrupt("sample %d: freeing host block %d: %v", n, b, err)
		}
	}
	if b := t.u32(so + sDevBlock).Load(); b != 0 && t.dalloc != nil {
		if err := t.dalloc.Free(b); err != nil {
			t.markCorrupt("sample %d: freeing device block %d: %v", n, b, err)
		}
	}
	t.dropMeta(n)
	t.set32(so+sRefs, 0)
	t.set32(so+sState, uint32(sampleFree))
	t.set32(so+sNext, t.u32(hFreeSample).Load())
	t.set32(hFreeSample, n)
	t.set32(hUsedSamples, t.u32(hUsedSamples).Load()-1)
	t.wakeSpace()
}

// ring returns slot's head and tail and whether they can be a ring: tail
// not before head and at most queueCap entries apart. The head word's
// takingBit (a lock-free take in flight, take.go) is not part of the
// position. Under the lock a false ok is damage (ringOK); without it, a
// ring that moved between the two loads can look too long too.
func (t *Topic) ring(slot uint32) (head, tail uint64, ok bool) {
	so := t.slotOff(slot)
	head = t.u64(so+eHead).Load() &^ takingBit
	tail = t.u64(so + eTail).Load()
	return head, tail, tail >= head && tail-head <= uint64(t.lay.queueCap)
}

// ringLen is the number of entries queued in slot's ring, at most queueCap
// (0 for a damaged ring: callers holding the lock check ringOK first).
// It may be read without the lock: head is read before tail, and both only
// grow.
func (t *Topic) ringLen(slot uint32) uint64 {
	head, tail, ok := t.ring(slot)
	if !ok {
		if tail > head {
			return uint64(t.lay.queueCap) // moving, or damaged: let the taker look under the lock
		}
		return 0
	}
	return tail - head
}

// ringOK checks slot's ring under the lock; a damaged one marks the topic
// corrupt: every loop over a ring is bounded by queueCap.
func (t *Topic) ringOK(slot uint32) error {
	if head, tail, ok := t.ring(slot); !ok {
		return t.markCorrupt("endpoint %d: ring head %d and tail %d are not %d entries or fewer apart", slot, head, tail, t.lay.queueCap)
	}
	return nil
}

// pushRing appends sample n to slot's ring, counting a reference. When the
// ring holds its capacity already, the oldest entry is dropped first
// (KEEP_LAST) and counted as lost when lossCount. A subscription's owner
// takes from its ring without the lock (take.go), so the oldest entry is
// claimed by compare-and-swap of the head word: whoever moves head past an
// entry owns its reference; the eviction keeps the head's takingBit.
func (t *Topic) pushRing(slot, n uint32, lossCount bool) {
	so := t.slotOff(slot)
	headW, tail := t.u64(so+eHead), t.u64(so+eTail)
	t.set32(t.sampleOff(n)+sRefs, t.u32(t.sampleOff(n)+sRefs).Load()+1)
	capacity := min(uint64(t.u32(so+eCap).Load()), uint64(t.lay.queueCap))
	var evicted uint32
	for {
		h := headW.Load()
		pos := h &^ takingBit
		if tail.Load()-pos < capacity {
			break
		}
		// head moves first: a death before the word is cleared leaves a
		// stale word outside [head, tail), which nothing reads. Only lock
		// holders write ring words, so the word read is the entry's as
		// long as the head word did not move.
		w := t.ringWord(slot, pos)
		e := w.Load()
		if !headW.CompareAndSwap(h, (pos+1)|(h&takingBit)) {
			continue // the owner took an entry meanwhile: look again
		}
		w.Store(0)
		evicted = e
		if lossCount {
			t.u64(so + eLost).Add(1)
		}
		break
	}
	t.ringWord(slot, tail.Load()).Store(n)
	tail.Add(1)
	if evicted != 0 {
		t.unref(evicted)
	}
}

// popRing removes and returns the oldest entry of slot's ring (0 if empty);
// its reference passes to the caller. Only for rings nobody takes from
// without the lock (a slot being cleared, settleTake done).
func (t *Topic) popRing(slot uint32) uint32 {
	so := t.slotOff(slot)
	head, tail := t.u64(so+eHead), t.u64(so+eTail)
	if head.Load() == tail.Load() {
		return 0
	}
	w := t.ringWord(slot, head.Load())
	n := w.Load()
	head.Add(1) // before clearing the word: see pushRing
	w.Store(0)
	if !t.validSample(n) {
		return 0
	}
	return n
}

// validSample reports whether n can name a sample; numbers read from shared
// memory are checked before use, so a damaged segment costs a sample, not a
// crash or a write to the wrong place.
// Only committed records are valid (the commit rule in layout.go).
func (t *Topic) validSample(n uint32) bool { return n >= 1 && n <= t.samplesMade() }

// clearSlot drops every reference slot holds and frees the slot. A damaged
// ring marks the topic corrupt (the references cannot be known) and leaves
// the slot as it is.
func (t *Topic) clearSlot(slot uint32) error {
	if err := t.ringOK(slot); err != nil {
		return err
	}
	if err := t.settleTake(slot); err != nil {
		return err
	}
	for i := uint32(0); i < t.lay.queueCap && t.ringLen(slot) > 0; i++ {
		t.unref(t.popRing(slot)) // unref ignores an invalid (0) number
	}
	for j := uint32(0); j < t.lay.heldCap; j++ {
		if w := t.heldWord(slot, j); w.Load() != 0 {
			n := w.Load()
			w.Store(0)
			t.u32(t.slotOff(slot) + eHeld).Add(^uint32(0))
			t.unref(n)
		}
	}

	so := t.slotOff(slot)
	t.u32(so + eState).Store(uint32(slotFree))
	t.u32(so + ePid).Store(0)
	t.u64(so + eStart).Store(0)
	t.wakeSpace()
	return nil
}

// repair runs after the lock was taken over from a dead holder: it recounts
// every reference from the rings, held arrays and takes in flight (slotRefs:
// live subscribers may be taking meanwhile), frees samples nobody
// references, rebuilds the free sample list, rebuilds the allocator's free
// lists and gives back blocks that no sample owns. It fails with ErrCorrupt
// when what it reads cannot be a valid state.
func (t *Topic) repair() error {
	if err := t.alloc.Rebuild(); err != nil {
		return fmt.Errorf("%w: topic %s: pool allocator: %v", ErrCorrupt, t.name, err)
	}
	if t.dalloc != nil {
		if err := t.dalloc.Rebuild(); err != nil {
			return fmt.Errorf("%w: topic %s: device pool allocator: %v", ErrCorrupt, t.name, err)
		}
	}
	made := t.samplesMade()
	refs := make([]uint32, made+1)
	count := func(n uint32) error {
		if n == 0 {
			return nil // a cleared word: it holds no reference (pops skip it)
		}
		if n > made {
			return fmt.Errorf("%w: topic %s: reference to sample %d", ErrCorrupt, t.name, n)
		}
		refs[n]++
		return nil
	}
	alive := map[shm.Owner]bool{}
	var nums []uint32
	for slot := uint32(0); slot < t.slotCount(); slot++ {
		so := t.slotOff(slot)
		st := slotState(t.u32(so + eState).Load())
		if st != slotActive && st != slotReclaiming {
			continue
		}
		var held uint32
		var err error
		if nums, held, err = t.slotRefs(slot, nums[:0]); err != nil {
			return err
		}
		for _, n := range nums {
			if err := count(n); err != nil {
				return err
			}
		}
		// A live owner may be taking without the lock (take.go) and
		// counts its own held entries; only a dead one's count is fixed.
		if o := (shm.Owner{Pid: t.u32(so + ePid).Load(), Start: t.u64(so + eStart).Load()}); st == slotReclaiming || !aliveIn(alive, o) {
			t.u32(so + eHeld).Store(held)
		}
	}
	owned := [2]map[uint32]bool{{}, {}} // host, device
	allocs := [2]*tlsf.Allocator{t.alloc, t.dalloc}
	// A sample's block fields: the payload's two forms, then the meta
	// block (host pool), which alone does not make a sample.
	fields := [3]struct {
		pool    int
		f       uint64
		payload bool
	}{{0, sBlock, true}, {1, sDevBlock, true}, {0, sMetaBlock, false}}
	var free, used uint32
	for n := made; n >= 1; n-- {
		so := t.sampleOff(n)
		st := sampleState(t.u32(so + sState).Load())
		if st != sampleFree {
			ok, any := true, false
			for _, fl := range fields {
				idx := t.u32(so + fl.f).Load()
				if idx == 0 {
					continue
				}
				if allocs[fl.pool] == nil {
					ok = false
					continue
				}
				blk, err := allocs[fl.pool].Lookup(idx)
				if err != nil || owned[fl.pool][blk.Index] {
					ok = false
					continue
				}
				any = any || fl.payload
			}
			if mb := t.u32(so + sMetaBlock).Load(); mb != 0 && mb == t.u32(so+sBlock).Load() {
				ok = false // one block named twice
			}
			if !ok || !any {
				if refs[n] != 0 {
					return fmt.Errorf("%w: topic %s: referenced sample %d has no valid block", ErrCorrupt, t.name, n)
				}
				st = sampleFree
			} else if refs[n] == 0 {
				st = sampleFree // nobody can reach it: give its blocks back below
			} else {
				for _, fl := range fields {
					if idx := t.u32(so + fl.f).Load(); idx != 0 {
						owned[fl.pool][idx] = true
					}
				}
			}
		} else if refs[n] != 0 {
			return fmt.Errorf("%w: topic %s: free sample %d is referenced", ErrCorrupt, t.name, n)
		}
		if st == sampleFree {
			t.u32(so + sState).Store(uint32(sampleFree))
			t.u32(so + sRefs).Store(0)
			t.u32(so + sBlock).Store(0)
			t.u32(so + sDevBlock).Store(0)
			t.clearMeta(n)
			t.u32(so + sNext).Store(free)
			free = n
			continue
		}
		t.u32(so + sRefs).Store(refs[n])
		used++
	}
	t.u32(hFreeSample).Store(free)
	t.u32(hUsedSamples).Store(used)
	orphans := 0
	for k, a := range allocs {
		if a == nil {
			continue
		}
		var lost []uint32
		a.ForEachUsed(func(b tlsf.Block) bool {
			if !owned[k][b.Index] {
				lost = append(lost, b.Index)
			}
			return true
		})
		for _, b := range lost {
			if err := a.Free(b); err != nil {
				return fmt.Errorf("%w: topic %s: %v", ErrCorrupt, t.name, err)
			}
		}
		if err := a.Check(); err != nil {
			return fmt.Errorf("%w: topic %s: %v", ErrCorrupt, t.name, err)
		}
		orphans += len(lost)
	}
	t.u32(hRepairs).Add(1)
	if lg := t.d.cfg.Logger; lg != nil {
		lg.Warn("repaired topic after its lock holder died", "topic", t.name, "samples", used, "orphan_blocks", orphans)
	}
	t.wakeSpace()
	return nil
}

// aliveIn reports whether o runs, looking each owner up once: alive
// holds the answers so far (one pass of the janitor, one graph query).
func aliveIn(alive map[shm.Owner]bool, o shm.Owner) bool {
	a, ok := alive[o]
	if !ok {
		a = shm.Alive(o)
		alive[o] = a
	}
	return a
}

// reclaimDead frees the slots of endpoints whose process has died. It takes
// the lock itself and reports how many it reclaimed.
func (t *Topic) reclaimDead() (int, error) { return t.reclaimDeadWith(map[shm.Owner]bool{}) }

// reclaimDeadWith is reclaimDead with the liveness of owners already
// judged: the janitor shares one map over a pass of all its topics, so a
// process with endpoints on a thousand topics is looked up once per pass,
// not once per topic.
func (t *Topic) reclaimDeadWith(alive map[shm.Owner]bool) (int, error) {
	type cand struct {
		slot uint32
		o    shm.Owner
	}
	var dead []cand
	if err := t.check(); err != nil {
		return 0, err
	}
	for slot := uint32(0); slot < t.slotCount(); slot++ {
		so := t.slotOff(slot)
		switch slotState(t.u32(so + eState).Load()) {
		case slotReclaiming:
			dead = append(dead, cand{slot, shm.Owner{}})
			continue
		case slotActive:
		default:
			continue
		}
		o := shm.Owner{Pid: t.u32(so + ePid).Load(), Start: t.u64(so + eStart).Load()}
		if !aliveIn(alive, o) {
			dead = append(dead, cand{slot, o})
		}
	}
	if len(dead) == 0 {
		return 0, nil
	}
	if err := t.lock(); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range dead {
		so := t.slotOff(c.slot)
		switch slotState(t.u32(so + eState).Load()) {
		case slotActive:
			if t.u32(so+ePid).Load() != c.o.Pid || t.u64(so+eStart).Load() != c.o.Start {
				continue // reused since the scan
			}
			t.u32(so + eState).Store(uint32(slotReclaiming))
			if Kind(t.u32(so+eKind).Load()) == KindPublisher {
				t.u32(hDeadPubs).Add(1)
			} else {
				t.u32(hDeadSubs).Add(1)
			}
		case slotReclaiming:
		default:
			continue
		}
		if err := t.clearSlot(c.slot); err != nil {
			t.unlock()
			return n, err
		}
		n++
		if lg := t.d.cfg.Logger; lg != nil {
			lg.Info("reclaimed endpoint of a dead process", "topic", t.name, "slot", c.slot, "owner", c.o.String())
		}
	}
	if n > 0 {
		t.generation.Add(1)
	}
	t.unlock()
	if n > 0 {
		t.notifyChange()
	}
	return n, nil
}

// deliverable checks sample n, read from slot's ring, before anyone is given
// it: it must be published and referenced, and its blocks must be blocks
// in use of the size and place the record says. Anything else is damage
// (a queue naming a free sample would deliver bytes nobody published) and
// marks the topic corrupt. Must hold the topic lock.
func (t *Topic) deliverable(slot, n uint32) error {
	if why := t.undeliverable(slot, n); why != "" {
		return t.markCorrupt("%s", why)
	}
	return nil
}

// undeliverable says what is wrong with sample n for deliverable ("" when
// nothing). Without the lock (a lock-free take holding a reference to n)
// the answer may be a transient one: a late joiner's history copy may be
// adding or dropping the sample's other form; the caller asks again under
// the lock before calling it damage.
func (t *Topic) undeliverable(slot, n uint32) string {
	so := t.sampleOff(n)
	st, refs := sampleState(t.u32(so+sState).Load()), t.u32(so+sRefs).Load()
	if st != samplePublished || refs == 0 {
		return fmt.Sprintf("endpoint %d's ring names sample %d, which is in state %d with %d references", slot, n, st, refs)
	}
	size := t.u64(so + sSize).Load()
	forms := 0
	for _, f := range [2]struct {
		a          *tlsf.Allocator
		block, off uint64
		limit      uint64
		name       string
	}{{t.alloc, sBlock, sOffset, t.poolCommitted(), "host"}, {t.dalloc, sDevBlock, sDevOffset, t.lay.devPoolSize, "device"}} {
		idx := t.u32(so + f.block).Load()
		if idx == 0 {
			continue
		}
		forms++
		if f.a == nil {
			return fmt.Sprintf("sample %d names a %s block, and the topic has no %s pool", n, f.name, f.name)
		}
		off := t.u64(so + f.off).Load()
		b, err := f.a.Lookup(idx)
		if err != nil || b.Offset != off || size > b.Size || off > f.limit || size > f.limit-off {
			return fmt.Sprintf("sample %d claims %d bytes at offset %d of %s block %d (%+v, %v)", n, size, off, f.name, idx, b, err)
		}
	}
	if forms == 0 {
		return fmt.Sprintf("published sample %d has no block", n)
	}
	return t.metaProblem(n)
}

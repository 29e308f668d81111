package zerocopy

import "fmt"

// MaxMeta is the largest meta block a sample may carry (Loan.SetMeta).
const MaxMeta = 64 << 10

// SetMeta attaches b to the loan's sample as its meta: a small side block
// of the topic's host pool (the staging pool of a GPU topic) that travels
// with the payload to every reader (Sample.Meta), through transient-local
// history and the bridge alike. A front end that splits a message puts
// its large array in the payload and the rest (opaque to the engine) here.
// Calling it again replaces the meta; a nil or empty b removes it. More
// than MaxMeta bytes is ErrInvalid.
//
// The block is allocated as a loan is: when the host pool is full a
// RELIABLE publisher waits up to Config.BlockTimeout for room, a
// BEST_EFFORT one counts a drop; either then returns ErrPoolExhausted
// and the loan keeps its previous meta (Discard it to drop the message).
func (l *Loan) SetMeta(b []byte) (err error) {
	if l.done {
		return fmt.Errorf("%w: loan already published or discarded", ErrInvalid)
	}
	if len(b) > MaxMeta {
		return fmt.Errorf("%w: %d bytes of meta, at most %d", ErrInvalid, len(b), MaxMeta)
	}
	p := l.p
	if !p.enter() {
		return ErrClosed
	}
	defer p.exit()
	t := p.t
	defer t.unguard(guard(), &err)
	var off uint64
	err = p.withSpace(func() error {
		if err := t.ownLoan(p.slot, l.n); err != nil {
			return err
		}
		var err error
		off, err = t.setMeta(l.n, uint64(len(b)))
		return err
	})
	if err != nil || len(b) == 0 {
		return err
	}
	// The sample is still only ours: nobody reads the block before Publish.
	return t.copyGuarded(t.pool[off:off+uint64(len(b))], b)
}

// Meta is the sample's meta block (Loan.SetMeta), read in place through
// the read-only mapping of the host pool like Bytes; nil when it has none,
// and after Return.
func (s *Sample) Meta() []byte { return s.meta }

// ownLoan checks that sample n is a loan slot holds. Must hold the topic
// lock.
func (t *Topic) ownLoan(slot, n uint32) error {
	so := t.sampleOff(n)
	if !t.validSample(n) || sampleState(t.u32(so+sState).Load()) != sampleLoaned || t.u32(so+sPubSlot).Load() != slot {
		return fmt.Errorf("%w: loan is not held by this publisher (reclaimed?)", ErrInvalid)
	}
	return nil
}

// setMeta gives sample n a meta block of size bytes (none for 0) in the
// host pool, in place of the one it has, and returns its offset. The new
// block is attached before the old one is freed: a death in between leaves
// an orphan block, which repair frees. Must hold the topic lock.
func (t *Topic) setMeta(n uint32, size uint64) (uint64, error) {
	so := t.sampleOff(n)
	if size == 0 {
		t.dropMeta(n)
		return 0, nil
	}
	b, err := t.allocBlock(false, size)
	if err != nil {
		return 0, err
	}
	old := t.u32(so + sMetaBlock).Load()
	t.u32(so + sMetaSize).Store(uint32(size))
	t.u64(so + sMetaOffset).Store(b.Offset)
	t.u32(so + sMetaBlock).Store(b.Index)
	if old != 0 {
		if err := t.alloc.Free(old); err != nil {
			return 0, t.markCorrupt("sample %d: freeing meta block %d: %v", n, old, err)
		}
	}
	return b.Offset, nil
}

// dropMeta frees sample n's meta block, if any. Must hold the topic lock.
func (t *Topic) dropMeta(n uint32) {
	so := t.sampleOff(n)
	b := t.u32(so + sMetaBlock).Load()
	t.set32(so+sMetaBlock, 0)
	t.set32(so+sMetaSize, 0)
	t.set64(so+sMetaOffset, 0)
	if b != 0 {
		if err := t.alloc.Free(b); err != nil {
			t.markCorrupt("sample %d: freeing meta block %d: %v", n, b, err)
		}
	}
}

// clearMeta forgets sample n's meta fields without freeing a block (a
// record being made or put on the free list by repair).
func (t *Topic) clearMeta(n uint32) {
	so := t.sampleOff(n)
	t.set32(so+sMetaBlock, 0)
	t.set32(so+sMetaSize, 0)
	t.set64(so+sMetaOffset, 0)
}

// metaProblem checks sample n's meta fields before the sample is given to
// anyone (undeliverable): none at all, or a host block in use that holds
// the size at the offset the record says, inside the committed pool. It
// says what is wrong, or "".
func (t *Topic) metaProblem(n uint32) string {
	so := t.sampleOff(n)
	idx, size, off := t.u32(so+sMetaBlock).Load(), uint64(t.u32(so+sMetaSize).Load()), t.u64(so+sMetaOffset).Load()
	if idx == 0 {
		if size != 0 || off != 0 {
			return fmt.Sprintf("sample %d has no meta block but %d meta bytes at %d", n, size, off)
		}
		return ""
	}
	pc := t.poolCommitted()
	b, err := t.alloc.Lookup(idx)
	if err != nil || idx == t.u32(so+sBlock).Load() || size == 0 || size > MaxMeta || b.Offset != off || size > b.Size || off > pc || size > pc-off {
		return fmt.Sprintf("sample %d claims %d meta bytes at offset %d of host block %d (%+v, %v)", n, size, off, idx, b, err)
	}
	return ""
}

// metaView is sample n's meta in the read-only mapping (nil when none);
// metaProblem has checked the fields; the caller holds a reference to n.
func (t *Topic) metaView(n uint32) []byte {
	so := t.sampleOff(n)
	if t.u32(so+sMetaBlock).Load() == 0 || t.rpool == nil {
		return nil
	}
	size, off := uint64(t.u32(so+sMetaSize).Load()), t.u64(so+sMetaOffset).Load()
	return t.rpool[off : off+size : off+size]
}

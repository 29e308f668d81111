package zerocopy

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// Taking without the topic lock (version 4).
//
// A subscription's ring has one consumer, the subscription (its takes are
// serialised in the process by takeMu), and producers that all hold the
// topic lock: publishers appending (pushRing, which may evict the oldest
// entry of a full ring), a late joiner's history, and whoever clears the
// slot. So a take needs no lock: it moves the oldest entry's reference
// from the ring into one of its held entries with these steps, each one
// store or compare-and-swap:
//
//	1. read head h and tail; read n, the entry at h
//	2. eTakeN = n
//	3. CAS head h → (h+1)|takingBit    the entry and its reference are ours
//	4. held[j] = n; eHeld++            the reference is recorded again
//	5. head &^= takingBit              done
//
// An eviction (under the lock) also moves head by CAS, keeping takingBit,
// so exactly one of a take and an eviction wins each entry. The sample's
// reference count never changes: a reference leaves the ring and enters a
// held entry. Whoever needs to know where every reference is (a repair
// after a lock holder's death, the reclaim of a dead subscriber) reads
// takingBit: while it is set, the sample eTakeN is referenced once by the
// take, unless a held entry names it already (step 4 done). A process
// killed at any step leaves a state that reading these words settles:
// before 3 nothing happened, between 3 and 5 the bit says where the
// reference is. A repair runs concurrently with live takers, so it counts a
// slot only from a snapshot in which the head word did not move.
//
// The sample's record is read only once the reference is ours (nobody
// frees or reuses it then). Its checks (undeliverable) run without the
// lock; one that fails is run again under the lock before the topic is
// called corrupt, because a late joiner's history copy may be changing the
// sample's other form in that moment. Samples whose lifespan passed go
// back under the lock (their last reference may free them).
//
// The lock is still taken when the lock-free steps see something they
// cannot settle alone: a ring that looks too long (moving, or damaged), an
// entry that is not a sample number, a held array that looks full, or
// an expired sample.

// takingBit, in a subscription's head word, marks a take between steps 3
// and 5 (see above). Positions never reach it.
const takingBit = uint64(1) << 63

// errTakeLocked: the lock-free steps cannot go on; take under the lock.
var errTakeLocked = errors.New("take under the lock")

// takeHook, when set (tests), runs at the named steps of a lock-free take:
// "read" after step 2, "claimed" after step 3, "heldword" inside step 4
// (the held entry stored, not yet counted), "held" after step 4.
var takeHook func(step string)

// take fills smp (zero) with the oldest queued sample, or returns
// ErrNoData; the caller has entered.
func (s *Subscription) take(smp *Sample) (err error) {
	t := s.t
	defer t.unguard(guard(), &err)
	if err := t.check(); err != nil {
		return err
	}
	s.takeMu.Lock()
	defer s.takeMu.Unlock()
	var now time.Time
	var n uint32
	// A reliable publisher may wait for this queue slot (only a reliable
	// KEEP_ALL subscription makes one wait: peerInfo.blocking), also when
	// the take found expired samples only.
	spaceWaits := s.qos.Reliability == qos.ReliabilityReliable && s.qos.History == qos.HistoryKeepAll
	for i := uint32(0); ; i++ {
		if i > t.lay.queueCap {
			if spaceWaits {
				t.wakeSpace()
			}
			return ErrNoData // a ring of expired samples only
		}
		n, err = t.claim(s.slot)
		if err == errTakeLocked {
			n, err = t.claimLocked(s.slot)
		}
		if err == ErrNoData && i > 0 && spaceWaits {
			t.wakeSpace() // the expired ones taken out made room
		}
		if err != nil {
			return err
		}
		if why := t.undeliverable(s.slot, n); why != "" {
			if err := t.recheck(s.slot, n); err != nil {
				return err
			}
		}
		if now.IsZero() {
			now = time.Now()
		}
		exp := int64(t.u64(t.sampleOff(n) + sExpires).Load())
		if exp == 0 || exp > now.UnixNano() {
			break
		}
		if err := t.dropExpired(s.slot, n); err != nil { // lifespan over: never delivered
			return err
		}
	}
	if spaceWaits {
		t.wakeSpace()
	}
	so := t.sampleOff(n)
	smp.s, smp.n = s, n
	// Each form once, its block index before its offset: a form a late
	// joiner adds meanwhile (addForm) is named only once it is filled,
	// offset first, and a record's offset of a form it has no block of
	// may be stale.
	smp.hasHost = t.u32(so+sBlock).Load() != 0
	smp.hasDev = t.u32(so+sDevBlock).Load() != 0
	if smp.hasHost {
		smp.info.Offset = t.u64(so + sOffset).Load()
	}
	if smp.hasDev {
		smp.devOff = t.u64(so + sDevOffset).Load()
	}
	size := t.u64(so + sSize).Load()
	smp.size = size // undeliverable checked it against the blocks
	smp.info.Sequence = t.u64(so + sSeq).Load()
	smp.info.SourceTimestamp = time.Unix(0, int64(t.u64(so+sStamp).Load()))
	copy(smp.info.Publisher[:], t.seg.Bytes(so+sGID, 16))
	smp.meta = t.metaView(n) // undeliverable checked it
	smp.info.ReceivedTimestamp = now
	if t.rpool != nil && smp.hasHost {
		smp.data = t.rpool[smp.info.Offset : smp.info.Offset+size : smp.info.Offset+size]
	}
	s.mu.Lock()
	s.lastData = now
	s.mu.Unlock()
	return nil
}

// recheck runs the checks of a sample that failed them without the lock
// again under it; a failure there is damage (deliverable marks the topic).
func (t *Topic) recheck(slot, n uint32) error {
	if err := t.lock(); err != nil {
		return err
	}
	defer t.unlock()
	return t.deliverable(slot, n)
}

// dropExpired gives back sample n, which slot took and whose lifespan
// passed.
func (t *Topic) dropExpired(slot, n uint32) error {
	if err := t.lock(); err != nil {
		return err
	}
	defer t.unlock()
	if t.dropHeld(slot, n) {
		t.unref(n)
	}
	return nil
}

// claim moves the oldest entry of slot's ring into a held entry without
// the lock (steps 1–5 above) and returns its sample number: ErrNoData when
// the ring is empty, errTakeLocked when the lock is needed. The caller
// holds the subscription's takeMu.
func (t *Topic) claim(slot uint32) (uint32, error) {
	so := t.slotOff(slot)
	headW, tailW := t.u64(so+eHead), t.u64(so+eTail)
	j, haveJ := uint32(0), false
	for range 64 {
		h := headW.Load()
		if h&takingBit != 0 {
			return 0, errTakeLocked // no take of ours is in flight: damage
		}
		tail := tailW.Load()
		if tail == h {
			return 0, ErrNoData
		}
		if tail < h || tail-h > uint64(t.lay.queueCap) {
			return 0, errTakeLocked // moving under evictions, or damaged
		}
		if !haveJ {
			if t.u32(so+eHeld).Load() >= t.lay.heldCap {
				return 0, errTakeLocked // full, or a Return in progress: ask under the lock
			}
			if j, haveJ = t.emptyHeld(slot); !haveJ {
				return 0, errTakeLocked
			}
		}
		n := t.ringWord(slot, h).Load()
		if !t.validSample(n) {
			return 0, errTakeLocked // a cleared entry (evicted meanwhile?) or damage
		}
		t.u32(so + eTakeN).Store(n)
		t.stepHook("read")
		if !headW.CompareAndSwap(h, (h+1)|takingBit) {
			continue // evicted meanwhile
		}
		t.stepHook("claimed")
		t.heldWord(slot, j).Store(n)
		t.stepHook("heldword")
		// Killed here, the slot's held count is one short of its entries:
		// reclaim decrements it once per entry, so it wraps on a slot
		// that is being freed (creation zeroes it; nothing reads it).
		t.u32(so + eHeld).Add(1)
		t.stepHook("held")
		headW.And(^takingBit)
		return n, nil
	}
	return 0, errTakeLocked // a publisher keeps evicting: take under the lock
}

func (t *Topic) stepHook(step string) {
	if takeHook != nil {
		takeHook(step)
	}
}

// claimLocked is claim under the topic lock, where the ring holds still
// (only this subscription's takes move it without the lock, and the
// caller is the one): a damaged ring or held array marks the topic
// corrupt, and entries that name no sample are skipped.
func (t *Topic) claimLocked(slot uint32) (uint32, error) {
	if err := t.lock(); err != nil {
		return 0, err
	}
	defer t.unlock()
	if err := t.ringOK(slot); err != nil {
		return 0, err
	}
	so := t.slotOff(slot)
	headW := t.u64(so + eHead)
	if headW.Load()&takingBit != 0 {
		return 0, t.markCorrupt("endpoint %d: ring head %#x has the taking bit set while no take is in flight", slot, headW.Load())
	}
	if h, tail, _ := t.ring(slot); h == tail {
		return 0, ErrNoData
	}
	j, err := t.freeHeld(slot) // ErrTooManyLoans, or a count that disagrees with the entries: damage
	if errors.Is(err, ErrTooManyLoans) {
		return 0, fmt.Errorf("%w: return taken samples first", ErrTooManyLoans)
	}
	if err != nil {
		return 0, err
	}
	for i := uint32(0); i <= t.lay.queueCap; i++ {
		h, tail, _ := t.ring(slot)
		if h == tail {
			return 0, ErrNoData
		}
		n := t.ringWord(slot, h).Load()
		if !t.validSample(n) {
			headW.Store(h + 1) // a cleared or damaged entry: skip it (it holds no reference)
			continue
		}
		t.u32(so + eTakeN).Store(n)
		headW.Store((h + 1) | takingBit)
		t.heldWord(slot, j).Store(n)
		t.u32(so + eHeld).Add(1)
		headW.Store(h + 1)
		return n, nil
	}
	return 0, ErrNoData
}

// emptyHeld finds an empty held entry of slot without the lock (the
// caller holds the subscription's takeMu, so no other take fills one).
func (t *Topic) emptyHeld(slot uint32) (uint32, bool) {
	for j := uint32(0); j < t.lay.heldCap; j++ {
		if t.heldWord(slot, j).Load() == 0 {
			return j, true
		}
	}
	return 0, false
}

// heldHas reports whether a held entry of slot names sample n.
func (t *Topic) heldHas(slot, n uint32) bool {
	for j := uint32(0); j < t.lay.heldCap; j++ {
		if t.heldWord(slot, j).Load() == n {
			return true
		}
	}
	return false
}

// settleTake finishes, for a slot being cleared, a take its owner left
// between steps 3 and 5: the sample moved out of the ring is released
// unless a held entry names it (which clearSlot releases). A slot of this
// process has no take in flight (Close waits for its calls), so the bit
// there is damage. Must hold the topic lock.
func (t *Topic) settleTake(slot uint32) error {
	so := t.slotOff(slot)
	headW := t.u64(so + eHead)
	h := headW.Load()
	if h&takingBit == 0 {
		return nil
	}
	if self := shm.Self(); t.u32(so+ePid).Load() == self.Pid && t.u64(so+eStart).Load() == self.Start {
		return t.markCorrupt("endpoint %d: ring head %#x has the taking bit set while no take is in flight", slot, h)
	}
	if n := t.u32(so + eTakeN).Load(); n != 0 && !t.heldHas(slot, n) {
		t.unref(n) // unref ignores a number that names no sample
	}
	headW.Store(h &^ takingBit)
	return nil
}

// slotRefs appends to nums the sample numbers slot's ring, held entries
// and unfinished take reference (one per reference), and returns the
// number of held entries in use. The owner may be taking without the lock
// meanwhile: the words are read until the head word is the same before
// and after (then no take started or finished in between, and a take
// caught between steps 3 and 5 is counted once, from its held entry or
// from eTakeN). Must hold the topic lock.
func (t *Topic) slotRefs(slot uint32, nums []uint32) ([]uint32, uint32, error) {
	so := t.slotOff(slot)
	headW, tailW := t.u64(so+eHead), t.u64(so+eTail)
	first := len(nums)
	for attempt := 0; attempt < 4*int(t.lay.queueCap)+16; attempt++ {
		nums = nums[:first]
		h := headW.Load()
		head, tail := h&^takingBit, tailW.Load()
		if tail < head || tail-head > uint64(t.lay.queueCap) {
			return nums, 0, fmt.Errorf("%w: topic %s: endpoint %d ring [%d,%d)", ErrCorrupt, t.name, slot, head, tail)
		}
		for p := head; p < tail; p++ {
			nums = append(nums, t.ringWord(slot, p).Load())
		}
		taking := t.u32(so + eTakeN).Load()
		held, found := uint32(0), false
		for j := uint32(0); j < t.lay.heldCap; j++ {
			if n := t.heldWord(slot, j).Load(); n != 0 {
				nums = append(nums, n)
				held++
				found = found || n == taking
			}
		}
		if h&takingBit != 0 && !found {
			nums = append(nums, taking)
		}
		if headW.Load() == h {
			return nums, held, nil
		}
	}
	return nums, 0, fmt.Errorf("%w: topic %s: endpoint %d's ring head keeps moving", ErrCorrupt, t.name, slot)
}

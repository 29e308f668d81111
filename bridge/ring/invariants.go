package ring

import "fmt"

// View is the combined state of one ring as an observer with both sides in
// sight sees it (a test, or a debugging dump exchanged over the control
// connection).
type View struct {
	Size        uint64
	Tail        uint64 // writer
	DelayedHead uint64 // writer
	Head        uint64 // reader
	Received    uint64 // reader
}

// Snapshot combines the pointers of a connected writer and reader.
func Snapshot(w *Writer, r *Reader) View {
	return View{Size: w.cfg.Size, Tail: w.tail, DelayedHead: w.dhead, Head: r.head, Received: r.recv}
}

// CheckInvariants checks the thesis' three invariants (§3.4) on a
// connected ring, in monotonic positions:
//
//	production:  Tail ≤ DelayedHead + Size  (never overwrite unconsumed data)
//	consumption: Head ≤ Received ≤ Tail     (never read what was not written)
//	lag:         DelayedHead ≤ Head         (the writer's copy never leads)
//
// and that every pointer is a multiple of 64. Between a link failure and
// the end of the reconnect handshake (Rewind, Resync) they need not hold.
func CheckInvariants(v View) error {
	switch {
	case v.Size == 0 || v.Size%Align != 0:
		return fmt.Errorf("ring size %d is not a positive multiple of %d", v.Size, Align)
	case (v.Tail|v.DelayedHead|v.Head|v.Received)%Align != 0:
		return fmt.Errorf("pointers not multiples of %d: %+v", Align, v)
	case v.DelayedHead > v.Head:
		return fmt.Errorf("lag invariant: delayed head %d leads head %d", v.DelayedHead, v.Head)
	case v.Head > v.Received:
		return fmt.Errorf("consumption invariant: head %d passes received %d", v.Head, v.Received)
	case v.Received > v.Tail:
		return fmt.Errorf("consumption invariant: received %d passes tail %d", v.Received, v.Tail)
	case v.Tail-v.DelayedHead > v.Size:
		return fmt.Errorf("production invariant: tail %d passes delayed head %d + size %d", v.Tail, v.DelayedHead, v.Size)
	}
	return nil
}

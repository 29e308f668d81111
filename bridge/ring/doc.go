// Package ring is the inter-host ring protocol of data path 2 (DESIGN.md §3,
// thesis §3.4–3.5, RB2) as a pure state machine: a publish-side Writer and a
// subscribe-side Reader of one ring of Size bytes that lives in the subscribe
// daemon's registered pinned memory and that the publish daemon fills with
// one-sided RDMA writes.
//
// What it owns:
//
//   - the pointers Tail (Writer), Head (Reader) and DelayedHead (the
//     Writer's copy of Head) as monotonically increasing byte positions, the
//     conservative "Exceed" check against DelayedHead, wrap-around that never
//     splits a record (the writer skips to offset 0 and accounts the gap as
//     consumed), and the watermark that decides when the Reader writes Head
//     back (every record, 1/8, 1/4 or 1/2 of the ring);
//   - the wire format (version 3): the 64-byte record header, the 8-byte
//     immediate of write-with-immediate mode, the tail slot of write-twice
//     mode, the head write-back and the rail hello (format.go documents
//     them bit by bit);
//   - rails: a ring written over several connections at once, each record
//     on one rail (Slot.Rail: the writer's choice, with the gap rule), the
//     reader taking records in ring order from whichever rail announces
//     the next one (Reader.NextRail);
//   - validation of everything the peer sends — immediates, tail values,
//     head write-backs, record headers — as errors, never panics;
//   - chunking of messages larger than MaxChunk, in equal chunks and
//     optionally striped over the rails (Writer.Split; refusal when chunking
//     is disabled), and an Assembler that checks chunk order on the reader
//     side;
//   - reliability bookkeeping: the Writer keeps every record in flight until
//     the remote Head has passed it (Acked), hands the rest back after a link
//     failure (Rewind), and the Reader suppresses the duplicates a rewind
//     resends, per topic by (sequence, chunk).
//
// What it must not do:
//
//   - I/O of any kind: the transports (libfabric fi_writedata / fi_write,
//     plain TCP) move the bytes, post the immediates and poll completion
//     queues and tail slots, and call in here. The Reader only reads the ring
//     view it is given; the Writer touches no ring memory at all;
//   - lock or start goroutines: one Writer and one Reader per ring, each
//     driven by one goroutine (or guarded by its caller);
//   - allocate per record on the steady-state path (Reserve, PutHeader,
//     Commit, OnImmediate, Consume, OnHeadUpdate, Acked with a reused slice);
//   - use unsafe or cgo, or know about topics beyond their 32-bit ids.
//
// # One record, write-with-immediate mode
//
//	publish side                               subscribe side
//	s, err := w.Reserve(RecordLen(n))
//	  (ErrFull: try again after a head update)
//	w.PutHeader(buf, s, &h), payload after it
//	fi_writedata(buf → ring+s.Offset, s.Imm) ──► rec, err := r.OnImmediate(imm)
//	w.Commit(s, &h)                              deliver r.Payload(&rec) unless rec.Dup
//	                                             wb, err := r.Consume(&rec)
//	w.OnHeadUpdate(head) ◄──── fi_write(head) ── if wb: write r.Head() back
//	acked = w.Acked(acked[:0])
//	  (release RELIABLE samples: a message is
//	  acknowledged with its last chunk)
//
// In write-twice mode the publish side also writes a pad header
// (w.PutPad) at s.PadOffset when s.Pad > 0, and after the data writes the
// 8-byte w.Tail() into the reader's tail slot; the reader polls the slot and
// calls r.OnTail(tail, recs) instead of OnImmediate.
//
// # Rings per host pair or per topic
//
// A Writer/Reader pair is one ring and knows nothing of its neighbours. A
// caller can run one ring per host pair (every topic's records share it,
// told apart by the header's topic id: least memory and registrations, but a
// slow topic's unconsumed records hold back the others) or one ring per
// topic (isolation, sizes per topic, more registered memory). Several rings
// may share one registered region and one completion queue: give each its
// own Config.Base and let the transport find the ring from ImmOffset(imm).
// Compact (4-byte) immediates carry no offset, so there each ring needs its
// own endpoint.
//
// # Why some choices
//
//   - Positions are uint64 byte counts, never wrapped: "Tail passes
//     DelayedHead + Size" is then one comparison, and the thesis' two Exceed
//     cases (linear and wrapped gap) collapse into it.
//   - MaxRecord is about Size/2 with every-record write-backs and about
//     Size/4 with the 1/2 watermark: a longer record could wait for a head
//     write-back that the reader, below its watermark, never sends
//     (Config.MaxRecord has the derivation). Messages are chunked instead.
//   - The low 32 bits of the immediate are self-sufficient (length and wrap
//     flag; the reader knows where the next record starts), because verbs
//     and EFA carry only 4 bytes of immediate data; the offset in the high
//     bits is a check and a demultiplexing aid where 8 bytes are available.
//   - The header carries (position / Size) mod 2^16, so a write-twice reader
//     never mistakes a header left from an earlier pass for a new one.
//   - Consumed memory is never zeroed (thesis §3.4): in write-with-immediate
//     mode completions say what landed; in write-twice mode the reader parses
//     only up to the tail value, all of which the writer has just written.
package ring

package ring

import "errors"

// ErrConfig reports a configuration the wire format or the protocol cannot
// support: a ring size that is not a multiple of 64 or exceeds MaxSize, a
// chunk size whose records could deadlock the watermark, and so on. The
// message names the field and the limit.
var ErrConfig = errors.New("invalid ring configuration")

// ErrFull reports that a record does not fit between Tail and DelayedHead +
// Size now (the thesis' "Exceed" check). It is transient: a later head
// update (Writer.OnHeadUpdate) frees space, and the configuration guarantees
// that one always comes once the reader has consumed what it received.
var ErrFull = errors.New("ring full")

// ErrTooLarge reports a record or message that can never be written: a
// record longer than Config.MaxRecord, or a message whose payload exceeds
// MaxChunk while chunking is disabled. Retrying cannot help.
var ErrTooLarge = errors.New("record larger than the ring allows")

// ErrProtocol reports a peer that broke the protocol: an immediate or a tail
// value out of range or out of order, a head update that goes backwards,
// beyond Tail or into the middle of a record. The state is left unchanged;
// the link should be treated as failed (reconnect, Rewind, Resync).
var ErrProtocol = errors.New("ring protocol violation")

// ErrCorrupt reports a record header in the ring that does not validate:
// bad magic or CRC, a stale lap, lengths outside the ring, inconsistent
// chunk fields. Like ErrProtocol it means the link is unusable.
var ErrCorrupt = errors.New("corrupt record header")

// ErrVersion reports a record header with a wire-format version other than
// Version.
var ErrVersion = errors.New("unsupported ring wire-format version")

// ErrMisuse reports a call that breaks the caller's side of the contract:
// Commit without a matching Reserve, Consume out of order, a header whose
// payload does not match the reserved length, the wrong call for the mode.
var ErrMisuse = errors.New("ring API misuse")

package benchlocal

import "time"

// The parent and each child talk over a SOCK_STREAM socket pair (the
// control socket, fd 3 in the child). Requests and replies are frames: a
// little-endian u32 length and that many bytes of JSON (benchutil's
// framing). During a cell the child acknowledges each message twice with
// one byte (ackOK, or ackErr followed by an error frame): once it has
// recorded the message's latency, and, after the parent has heard from
// every child and sent one byte back, once it has checked the bytes and
// released the message. The UDS baseline's payload goes over a second
// socket pair (fd 4 in the child) that carries nothing else.
const (
	ackOK  = 'A'
	ackErr = 'E'

	maxFrame = 64 << 20
)

// request is what the parent asks a child.
type request struct {
	Op string `json:"op"` // "init", "cell", "exit"

	// init
	Prefix   string        `json:"prefix,omitempty"`
	Domain   uint32        `json:"domain,omitempty"`
	PoolSize uint64        `json:"pool_size,omitempty"`
	BusyPoll time.Duration `json:"busy_poll,omitempty"`
	Index    int           `json:"index,omitempty"`
	Floor    string        `json:"floor,omitempty"` // the futex floor's segment (PathFutex)

	// cell
	Path  string `json:"path,omitempty"` // PathRgaps, PathUDS or PathFutex
	Topic string `json:"topic,omitempty"`
	Size  int    `json:"size,omitempty"`
	Count int    `json:"count,omitempty"` // messages, warm-up included
	// FloorBase (PathFutex) is the floor word's value when the cell
	// begins: message i is out once it passed FloorBase+i.
	FloorBase uint32 `json:"floor_base,omitempty"`
}

// reply is what a child answers. Err is set when the request failed.
type reply struct {
	Err string `json:"err,omitempty"`

	// init
	Pid      int           `json:"pid,omitempty"`
	BusyPoll time.Duration `json:"busy_poll,omitempty"`

	// end of a cell
	Lat      []int64 `json:"lat,omitempty"`  // ns, one per message, in order
	Wake     []int64 `json:"wake,omitempty"` // rgaps: ns from t0 until Wait returned
	Bad      int     `json:"bad,omitempty"`  // messages whose bytes were wrong
	FirstBad string  `json:"first_bad,omitempty"`
}

func (r reply) Failure() string { return r.Err }

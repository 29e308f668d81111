package benchgpu

import "time"

// The parent and each subscriber process talk over a SOCK_STREAM socket
// pair (the control socket, fd 3 in the child). Requests, replies and the
// per-message acknowledgements are frames: a little-endian u32 length and
// that many bytes of JSON (benchutil's framing). Acknowledgements are never
// inside a timed interval. The Pageable-UDS baseline's payload goes over a
// second socket pair (fd 4 in the child) that carries nothing else but the
// receiver's one-byte "got it all".
const (
	maxFrame = 1 << 20

	// peerTimeout bounds every blocking read or write on a socket to a
	// child: a child that hangs fails the run instead of hanging it.
	peerTimeout = 120 * time.Second
)

// request is what the parent asks a child.
type request struct {
	Op string `json:"op"` // "init", "dp1", "dp3", "floor"; within a dp3 cell, "check"

	// init
	Prefix      string `json:"prefix,omitempty"`
	Domain      uint32 `json:"domain,omitempty"`
	PoolSize    uint64 `json:"pool_size,omitempty"`
	StagingSize uint64 `json:"staging_size,omitempty"`
	Device      int    `json:"device,omitempty"`
	Index       int    `json:"index,omitempty"`
	Fake        bool   `json:"fake,omitempty"`     // tests: the host-memory fake device
	Schedule    string `json:"schedule,omitempty"` // Options.SubSchedule
	Floor       string `json:"floor,omitempty"`    // the futex floor's segment (benchutil.Floor)
	// BusyPoll: Options.BusyPoll (data path 3's subscribers).
	BusyPoll time.Duration `json:"busy_poll,omitempty"`

	// dp1, dp3
	Path  string `json:"path,omitempty"` // dp3: PathShared or PathIceoryx
	Topic string `json:"topic,omitempty"`
	Size  int    `json:"size,omitempty"`
	Count int    `json:"count,omitempty"` // messages, warm-up included
	Seed  uint32 `json:"seed,omitempty"`  // dp1: message i carries pattern Seed+i
	// floor: the floor word's value when the cell began.
	FloorBase uint32 `json:"floor_base,omitempty"`
}

// reply answers a request (and ends a cell). Err is set when it failed.
type reply struct {
	Err string `json:"err,omitempty"`

	// init
	Pid    int   `json:"pid,omitempty"`
	InitNs int64 `json:"init_ns,omitempty"` // CUDA context + built-in kernels
	// BusyPoll: the engine's Config.BusyPoll in the child.
	BusyPoll time.Duration `json:"busy_poll,omitempty"`
}

func (r reply) Failure() string { return r.Err }

// ack is a child's word on one message.
type ack struct {
	Err string `json:"err,omitempty"` // the cell failed; the child stops it
	Bad string `json:"bad,omitempty"` // dp1: the first wrong byte seen

	// dp3: wall-clock UnixNano of the subscriber's steps
	Wake      int64 `json:"wake,omitempty"`       // Wait returned
	Taken     int64 `json:"taken,omitempty"`      // Take returned the sample
	CopyStart int64 `json:"copy_start,omitempty"` // Pageable-Iceoryx: before its own H2D copy
	Ptr       int64 `json:"ptr,omitempty"`        // holds a device pointer to complete data

	// dp3, the second acknowledgement of a message (after "check"): what
	// the checksum kernel computed, when the check began (UnixNano) and
	// how long the kernel took (ns).
	Sum     uint64 `json:"sum,omitempty"`
	CheckAt int64  `json:"check_at,omitempty"`
	Check   int64  `json:"check,omitempty"`
}

package gpupool

import (
	"errors"
	"fmt"
	"strings"
)

// ProtocolVersion is carried in every request; a daemon refuses others.
const ProtocolVersion = 1

// MaxMessage bounds a request or reply.
const MaxMessage = 4096

// Handle kinds a reply can carry.
const (
	HandleVMMFD = "vmm-fd" // CUDA VMM allocation exported as a POSIX fd (SCM_RIGHTS)
	HandleIPC   = "ipc"    // legacy cuIpcGetMemHandle handle (64 bytes, in IPC)
)

// Request asks the daemon for something. Op "pool" asks for the pool of a
// topic segment; "ping" checks the daemon is there; "stats" lists pools.
type Request struct {
	Version int    `json:"version"`
	Op      string `json:"op"`
	Segment string `json:"segment,omitempty"` // shared-memory name of the topic
	TagOff  uint64 `json:"tag_off,omitempty"` // where the segment keeps its instance tag
	Tag     uint64 `json:"tag,omitempty"`     // the tag of the segment the client mapped
	Size    uint64 `json:"size,omitempty"`    // pool bytes wanted
	Device  int    `json:"device,omitempty"`  // CUDA ordinal
}

// Reply answers a Request.
type Reply struct {
	OK     bool       `json:"ok"`
	Error  string     `json:"error,omitempty"`
	NotSup bool       `json:"not_supported,omitempty"` // the error means: no GPU here
	Handle string     `json:"handle,omitempty"`
	Size   uint64     `json:"size,omitempty"` // bytes actually allocated (granularity)
	IPC    []byte     `json:"ipc,omitempty"`
	Pools  []PoolInfo `json:"pools,omitempty"`
	Pid    int        `json:"pid,omitempty"` // the daemon's
}

// PoolInfo describes one pool the daemon owns.
type PoolInfo struct {
	Segment string `json:"segment"`
	Size    uint64 `json:"size"`
	Device  int    `json:"device"`
	Handle  string `json:"handle"`
}

// Tag names one incarnation of a segment: 8 bytes at Off in the segment
// file, random per creation. Names are reused when topics go and come back;
// tags are not, so a client holding a removed segment never gets the pool of
// its successor.
type Tag struct {
	Off   uint64
	Value uint64
}

// ErrNoDaemon is returned when no daemon answers and none could be started.
var ErrNoDaemon = errors.New("no rgaps daemon")

// ErrRefused is returned when the daemon refused the request.
var ErrRefused = errors.New("refused by the rgaps daemon")

// SocketName is the abstract Unix socket name of the daemon of a domain
// (the leading NUL is added by the caller's sockaddr).
func SocketName(prefix string, domain uint32) string {
	return fmt.Sprintf("%s-gpud-d%d", prefix, domain)
}

func (r Request) validate() error {
	if r.Version != ProtocolVersion {
		return fmt.Errorf("protocol version %d, daemon speaks %d", r.Version, ProtocolVersion)
	}
	switch r.Op {
	case "ping", "stats":
		return nil
	case "pool":
		if r.Segment == "" || len(r.Segment) > 255 || strings.ContainsAny(r.Segment, "/\x00") || r.Segment[0] == '.' {
			return errors.New("pool request without a valid segment name")
		}
		if r.Size == 0 || r.Size > 1<<40 {
			return fmt.Errorf("pool size %d out of range", r.Size)
		}
		if r.Device < 0 || r.Device > 64 {
			return fmt.Errorf("device %d out of range", r.Device)
		}
		return nil
	}
	return fmt.Errorf("unknown op %q", r.Op)
}

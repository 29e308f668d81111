package bench

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"
)

// The parent and each child talk over a SOCK_STREAM socket pair (the
// control socket, fd 3 in the child). Requests and replies are frames: a
// little-endian u32 length and that many bytes of JSON. During a cell the
// child acknowledges each message twice with one byte (ackOK, or ackErr
// followed by an error frame): once it has recorded the message's latency,
// and, after the parent has heard from every child and sent one byte back,
// once it has checked the bytes and released the message. The UDS
// baseline's payload goes over a second socket pair (fd 4 in the child)
// that carries nothing else.
const (
	childControlFD = 3
	childDataFD    = 4

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

	// cell
	Path  string `json:"path,omitempty"` // PathRgaps or PathUDS
	Topic string `json:"topic,omitempty"`
	Size  int    `json:"size,omitempty"`
	Count int    `json:"count,omitempty"` // messages, warm-up included
}

// reply is what a child answers. Err is set when the request failed.
type reply struct {
	Err string `json:"err,omitempty"`

	// init
	Pid      int           `json:"pid,omitempty"`
	BusyPoll time.Duration `json:"busy_poll,omitempty"`

	// end of a cell
	Lat      []int64 `json:"lat,omitempty"` // ns, one per message, in order
	Bad      int     `json:"bad,omitempty"` // messages whose bytes were wrong
	FirstBad string  `json:"first_bad,omitempty"`
}

// fdio reads and writes a blocking file descriptor with plain system calls
// (no Go poller in the way: the baseline blocks in read(2) as a C
// subscriber would).
type fdio int

func (f fdio) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(f), p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errors.New("peer did not answer in time")
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (f fdio) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.Write(int(f), p[done:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return done, errors.New("peer did not read in time")
		case err != nil:
			return done, err
		}
		done += n
	}
	return done, nil
}

func writeFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	buf := make([]byte, 4+len(b))
	binary.LittleEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

func readFrame(r io.Reader, v any) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > maxFrame {
		return fmt.Errorf("frame of %d bytes", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// setTimeouts bounds blocking reads and writes on a socket, so that a hung
// peer turns into an error rather than a hung benchmark.
func setTimeouts(fd int, d time.Duration) error {
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	if err := syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	return syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
}

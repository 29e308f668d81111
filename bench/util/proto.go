package benchutil

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
// control socket, fd 3 in the child); a second pair (fd 4) carries the
// payload of a Unix-domain-socket baseline. Requests and replies are
// frames: a little-endian u32 length and that many bytes of JSON. What
// else goes over the sockets is each benchmark's own.
const (
	childControlFD = 3
	childDataFD    = 4
)

// FD reads and writes a blocking file descriptor with plain system calls
// (no Go poller in the way: a baseline receiver blocks in read(2) as a C
// program would).
type FD int

func (f FD) Read(p []byte) (int, error) {
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

func (f FD) Write(p []byte) (int, error) {
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

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
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

// ReadFrame reads one frame of at most limit bytes into v.
func ReadFrame(r io.Reader, v any, limit uint32) error {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return err
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	if n > limit {
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

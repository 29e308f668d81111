package control

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Wire constants of framing version 1 (doc.go has the table).
const (
	// Magic opens every frame; it makes a stray connection (HTTP, another
	// protocol, a port scanner) fail at the first frame with a clear error.
	Magic = "RGCP"
	// Version is the framing version in every header.
	Version = 1
	// HeaderLen is the size of a frame header.
	HeaderLen = 12
	// MaxFrame is the largest payload a frame may carry. Control messages
	// are small; the limit bounds what a peer can make us allocate.
	MaxFrame = 1 << 20
	// DefaultWriteTimeout bounds a Send when Conn.WriteTimeout is zero.
	DefaultWriteTimeout = 10 * time.Second
)

// MsgType is the type byte of a frame. Types 1…15 belong to this package
// (the handshake and heartbeats); users define theirs in 16…255. Type 0 is
// invalid on the wire.
type MsgType uint8

// The package's message types.
const (
	TypeHello     MsgType = 1 // Hello, both sides, first
	TypeAuth      MsgType = 2 // Auth, the MAC over both Hellos
	TypeWelcome   MsgType = 3 // Welcome, the handshake succeeded
	TypeReject    MsgType = 4 // Reject, the handshake failed and why
	TypeHeartbeat MsgType = 5 // Heartbeat, consumed by Session

	// MaxReservedType is the last type reserved for this package; a Session
	// refuses to send reserved types and drops a connection that sends one
	// it does not know.
	MaxReservedType MsgType = 15
	// FirstUserType is the first type free for users.
	FirstUserType MsgType = 16
)

func (t MsgType) String() string {
	switch t {
	case TypeHello:
		return "hello"
	case TypeAuth:
		return "auth"
	case TypeWelcome:
		return "welcome"
	case TypeReject:
		return "reject"
	case TypeHeartbeat:
		return "heartbeat"
	}
	return "type " + strconv.Itoa(int(t))
}

// Stats counts what went through a Conn. Bytes include the frame headers.
type Stats struct {
	FramesSent, BytesSent         uint64
	FramesReceived, BytesReceived uint64
}

// Conn is one control stream over a net.Conn: framing, JSON payloads, a
// write timeout, statistics. Send may be called from many goroutines; Recv
// from one at a time (concurrent calls are serialised). Conn does not
// authenticate: run Handshake first.
type Conn struct {
	// WriteTimeout bounds each Send (DefaultWriteTimeout when zero). Set it
	// before the Conn is shared between goroutines.
	WriteTimeout time.Duration

	nc net.Conn

	// rmu serialises Recv and guards the fields below.
	rmu  sync.Mutex
	r    *bufio.Reader
	hdr  [HeaderLen]byte
	rerr error // sticky: a frame was cut in the middle, the stream is lost

	// wmu serialises writes, so frames never interleave, and guards werr.
	wmu  sync.Mutex
	werr error // sticky: a write failed, possibly after part of a frame

	framesSent, bytesSent, framesRecv, bytesRecv atomic.Uint64
}

// NewConn wraps c. The Conn owns c from now on: Close closes it.
func NewConn(c net.Conn) *Conn {
	return &Conn{nc: c, r: bufio.NewReaderSize(c, 4096)}
}

// Send encodes v as JSON and sends it as one frame of type t, within
// WriteTimeout. A payload over MaxFrame returns ErrTooLarge and sends
// nothing. A failed write may have sent part of a frame, so it closes the
// connection and every later Send returns the same error.
func (c *Conn) Send(t MsgType, v any) error {
	timeout := c.WriteTimeout
	if timeout <= 0 {
		timeout = DefaultWriteTimeout
	}
	return c.send(t, v, time.Now().Add(timeout))
}

// send is Send with an absolute deadline: the handshake bounds all its
// writes by its own deadline instead of WriteTimeout.
func (c *Conn) send(t MsgType, v any, deadline time.Time) error {
	if t == 0 {
		return fmt.Errorf("%w: sending message type 0", ErrProtocol)
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding %v message: %w", t, err)
	}
	if len(payload) == 0 || payload[0] != '{' {
		// The receiver would reject it; fail here where the bug is.
		return fmt.Errorf("%w: %v message %T does not encode to a JSON object", ErrProtocol, t, v)
	}
	if len(payload) > MaxFrame {
		return fmt.Errorf("%w: %v message of %d bytes", ErrTooLarge, t, len(payload))
	}
	var hdr [HeaderLen]byte
	putHeader(hdr[:], t, uint32(len(payload)))

	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if err := c.nc.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("sending %v: %w", t, err)
	}
	bufs := net.Buffers{hdr[:], payload}
	n, err := bufs.WriteTo(c.nc)
	if err != nil {
		c.werr = fmt.Errorf("sending %v (%d of %d bytes written): %w", t, n, HeaderLen+len(payload), err)
		c.nc.Close()
		return c.werr
	}
	c.framesSent.Add(1)
	c.bytesSent.Add(uint64(n))
	return nil
}

// Recv reads the next frame and returns its type and raw JSON payload (a
// JSON object, checked; pass it to Decode). At a clean end of stream
// between frames it returns io.EOF. Framing errors wrap ErrProtocol or
// ErrVersion; a frame cut short wraps ErrProtocol and io.ErrUnexpectedEOF.
// A deadline (SetReadDeadline) that expires before the first byte of a
// frame leaves the stream intact and may be retried; any error inside a
// frame is returned again by every later Recv.
func (c *Conn) Recv() (MsgType, []byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return 0, nil, c.rerr
	}
	t, payload, err := c.readFrame()
	if err != nil {
		return 0, nil, err
	}
	c.framesRecv.Add(1)
	c.bytesRecv.Add(uint64(HeaderLen + len(payload)))
	return t, payload, nil
}

// readFrame does the work of Recv; must hold rmu.
func (c *Conn) readFrame() (MsgType, []byte, error) {
	n, err := io.ReadFull(c.r, c.hdr[:])
	switch {
	case err == nil:
	case n == 0 && err == io.EOF:
		return 0, nil, io.EOF
	case n == 0:
		// Nothing of the frame consumed (a deadline, a reset): the stream
		// is still at a frame boundary.
		return 0, nil, fmt.Errorf("reading frame header: %w", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.rerr = fmt.Errorf("%w: frame header cut after %d of %d bytes: %w", ErrProtocol, n, HeaderLen, io.ErrUnexpectedEOF)
		return 0, nil, c.rerr
	default:
		c.rerr = fmt.Errorf("reading frame header (%d of %d bytes): %w", n, HeaderLen, err)
		return 0, nil, c.rerr
	}
	t, length, err := parseHeader(c.hdr[:])
	if err != nil {
		// The stream cannot be resynchronised after a bad header.
		c.rerr = err
		return 0, nil, err
	}
	// length ≤ MaxFrame here: a peer cannot make us allocate more.
	payload := make([]byte, length)
	if n, err := io.ReadFull(c.r, payload); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			c.rerr = fmt.Errorf("%w: %v frame cut after %d of %d payload bytes: %w", ErrProtocol, t, n, length, io.ErrUnexpectedEOF)
		} else {
			c.rerr = fmt.Errorf("reading %v payload (%d of %d bytes): %w", t, n, length, err)
		}
		return 0, nil, c.rerr
	}
	if err := checkObject(payload); err != nil {
		// The frame boundary is intact; the caller decides whether to go on.
		return 0, nil, fmt.Errorf("%v frame: %w", t, err)
	}
	return t, payload, nil
}

// putHeader writes a version 1 header for a payload of length bytes.
func putHeader(b []byte, t MsgType, length uint32) {
	copy(b[0:4], Magic)
	b[4] = Version
	b[5] = byte(t)
	binary.LittleEndian.PutUint16(b[6:8], 0)
	binary.LittleEndian.PutUint32(b[8:12], length)
}

// parseHeader validates a header in the order of doc.go's table.
func parseHeader(b []byte) (MsgType, uint32, error) {
	if string(b[0:4]) != Magic {
		return 0, 0, fmt.Errorf("%w: not an rgaps control stream: magic %q, want %q", ErrProtocol, b[0:4], Magic)
	}
	if b[4] != Version {
		return 0, 0, fmt.Errorf("%w: frame version %d, this side speaks %d", ErrVersion, b[4], Version)
	}
	t := MsgType(b[5])
	if flags := binary.LittleEndian.Uint16(b[6:8]); flags != 0 {
		return 0, 0, fmt.Errorf("%w: %v frame with flags %#04x, want 0", ErrProtocol, t, flags)
	}
	length := binary.LittleEndian.Uint32(b[8:12])
	if length > MaxFrame {
		return 0, 0, fmt.Errorf("%w: %v frame of %d bytes exceeds MaxFrame (%d)", ErrProtocol, t, length, MaxFrame)
	}
	if t == 0 {
		return 0, 0, fmt.Errorf("%w: frame of type 0", ErrProtocol)
	}
	return t, length, nil
}

// checkObject accepts exactly one JSON object (with surrounding whitespace).
func checkObject(p []byte) error {
	if t := bytes.TrimLeft(p, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return fmt.Errorf("%w: payload is not a JSON object", ErrProtocol)
	}
	if !json.Valid(p) {
		return fmt.Errorf("%w: payload is not valid JSON", ErrProtocol)
	}
	return nil
}

// Decode decodes a payload from Recv into v, strictly: the payload must be
// one JSON object, every field must be known to v (a typo or a field of a
// newer message version is an error, not silently dropped), and nothing may
// follow it. Errors wrap ErrProtocol.
func Decode(payload []byte, v any) error {
	if err := checkObject(payload); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(payload))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return fmt.Errorf("%w: decoding %T: %w", ErrProtocol, v, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return fmt.Errorf("%w: decoding %T: data after the JSON object", ErrProtocol, v)
	}
	return nil
}

// SetReadDeadline sets the deadline of Recv (see net.Conn).
func (c *Conn) SetReadDeadline(t time.Time) error { return c.nc.SetReadDeadline(t) }

// Close closes the connection; blocked Send and Recv calls return.
func (c *Conn) Close() error { return c.nc.Close() }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// LocalAddr returns our address.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// Stats returns the counters; safe at any time.
func (c *Conn) Stats() Stats {
	return Stats{
		FramesSent:     c.framesSent.Load(),
		BytesSent:      c.bytesSent.Load(),
		FramesReceived: c.framesRecv.Load(),
		BytesReceived:  c.bytesRecv.Load(),
	}
}

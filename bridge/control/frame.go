package control

import (
	"bufio"
	"bytes"
	"crypto/aes"
	"crypto/cipher"
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

// Wire constants of framing version 2 (doc.go has the table).
const (
	// Magic opens every frame; it makes a stray connection (HTTP, another
	// protocol, a port scanner) fail at the first frame with a clear error.
	Magic = "RGCP"
	// Version is the framing version in every header. Version 1 (a
	// 12-byte header, frames in clear after the handshake) is refused.
	Version = 2
	// HeaderLen is the size of a frame header.
	HeaderLen = 20
	// MaxFrame is the largest message (JSON payload) a frame may carry.
	// Control messages are small; the limit bounds what a peer can make us
	// allocate. A sealed frame carries MaxFrame + TagLen bytes at most.
	MaxFrame = 1 << 20
	// TagLen is the AES-GCM tag a sealed frame's payload ends with.
	TagLen = 16
	// FlagSealed marks a sealed frame (every frame after the handshake).
	FlagSealed = 0x0001
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
// write timeout, statistics, and (after Handshake) sealing. Send may be
// called from many goroutines; Recv from one at a time (concurrent calls
// are serialised). Conn does not authenticate: run Handshake first.
type Conn struct {
	// WriteTimeout bounds each Send (DefaultWriteTimeout when zero). Set it
	// before the Conn is shared between goroutines.
	WriteTimeout time.Duration

	nc net.Conn

	// rmu serialises Recv and guards the fields below.
	rmu     sync.Mutex
	r       *bufio.Reader
	hdr     [HeaderLen]byte
	rerr    error       // sticky: a frame was cut in the middle, or forged: the stream is lost
	open    cipher.AEAD // set once the handshake succeeded: every frame must be sealed
	recvSeq uint64      // sequence number of the last sealed frame received

	// wmu serialises writes, so frames never interleave (and sequence
	// numbers go out in order), and guards the fields below.
	wmu     sync.Mutex
	werr    error       // sticky: a write failed, possibly after part of a frame
	seal    cipher.AEAD // set once the handshake succeeded
	sendSeq uint64      // sequence number of the last sealed frame sent

	framesSent, bytesSent, framesRecv, bytesRecv atomic.Uint64
}

// NewConn wraps c. The Conn owns c from now on: Close closes it.
func NewConn(c net.Conn) *Conn {
	return &Conn{nc: c, r: bufio.NewReaderSize(c, 4096)}
}

// startSealing switches both directions to sealed frames with the keys
// the handshake derived. Called by Handshake once, between its last clear
// frames and the first sealed one, before the Conn is shared.
func (c *Conn) startSealing(sendKey, recvKey []byte) error {
	s, err := newAEAD(sendKey)
	if err != nil {
		return err
	}
	o, err := newAEAD(recvKey)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	c.seal, c.sendSeq = s, 0
	c.wmu.Unlock()
	c.rmu.Lock()
	c.open, c.recvSeq = o, 0
	c.rmu.Unlock()
	return nil
}

// Sealed reports whether the connection seals its frames (it does once
// Handshake succeeded).
func (c *Conn) Sealed() bool {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.seal != nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("control frame key: %w", err)
	}
	return cipher.NewGCM(blk)
}

// frameNonce is the AES-GCM nonce of a sealed frame: its sequence number.
// Keys are fresh for every connection and direction, and the sequence
// number only grows, so a nonce is never used twice with one key.
func frameNonce(seq uint64) []byte {
	var n [12]byte
	binary.LittleEndian.PutUint64(n[4:], seq)
	return n[:]
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
	payload, err := encode(t, v)
	if err != nil {
		return err
	}
	return c.sendPayload(t, payload, deadline)
}

// encode is the JSON payload of a message, checked as the receiver will.
func encode(t MsgType, v any) ([]byte, error) {
	if t == 0 {
		return nil, fmt.Errorf("%w: sending message type 0", ErrProtocol)
	}
	payload, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %v message: %w", t, err)
	}
	if len(payload) == 0 || payload[0] != '{' {
		// The receiver would reject it; fail here where the bug is.
		return nil, fmt.Errorf("%w: %v message %T does not encode to a JSON object", ErrProtocol, t, v)
	}
	if len(payload) > MaxFrame {
		return nil, fmt.Errorf("%w: %v message of %d bytes", ErrTooLarge, t, len(payload))
	}
	return payload, nil
}

// sendPayload frames (and, once the handshake is done, seals) an encoded
// payload and writes it.
func (c *Conn) sendPayload(t MsgType, payload []byte, deadline time.Time) error {
	var hdr [HeaderLen]byte
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	body := payload
	if c.seal != nil {
		seq := c.sendSeq + 1
		putHeader(hdr[:], t, FlagSealed, uint32(len(payload)+TagLen), seq)
		body = c.seal.Seal(nil, frameNonce(seq), payload, hdr[:])
		c.sendSeq = seq // used even if the write fails: the stream is lost then
	} else {
		putHeader(hdr[:], t, 0, uint32(len(payload)), 0)
	}
	if err := c.nc.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("sending %v: %w", t, err)
	}
	bufs := net.Buffers{hdr[:], body}
	n, err := bufs.WriteTo(c.nc)
	if err != nil {
		c.werr = fmt.Errorf("sending %v (%d of %d bytes written): %w", t, n, HeaderLen+len(body), err)
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
// ErrVersion; a frame cut short wraps ErrProtocol and io.ErrUnexpectedEOF;
// after the handshake, a frame that is not sealed, fails its tag or does
// not carry the next sequence number wraps ErrIntegrity. A deadline
// (SetReadDeadline) that expires before the first byte of a frame leaves
// the stream intact and may be retried; any error inside a frame is
// returned again by every later Recv.
func (c *Conn) Recv() (MsgType, []byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.rerr != nil {
		return 0, nil, c.rerr
	}
	t, payload, wire, err := c.readFrame()
	if err != nil {
		return 0, nil, err
	}
	c.framesRecv.Add(1)
	c.bytesRecv.Add(uint64(HeaderLen + wire))
	return t, payload, nil
}

// readFrame does the work of Recv; must hold rmu. wire is the payload's
// length on the wire (with the tag).
func (c *Conn) readFrame() (t MsgType, payload []byte, wire int, err error) {
	// The magic and the version first: a stray client or an old daemon is
	// told so at once, not after a full header of bytes it may never send.
	n, err := io.ReadFull(c.r, c.hdr[:prefixLen])
	if err == nil {
		if err = checkPrefix(c.hdr[:]); err != nil {
			c.rerr = err
			return 0, nil, 0, err
		}
		var m int
		m, err = io.ReadFull(c.r, c.hdr[prefixLen:])
		n += m
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
	}
	switch {
	case err == nil:
	case n == 0 && err == io.EOF:
		return 0, nil, 0, io.EOF
	case n == 0:
		// Nothing of the frame consumed (a deadline, a reset): the stream
		// is still at a frame boundary.
		return 0, nil, 0, fmt.Errorf("reading frame header: %w", err)
	case errors.Is(err, io.ErrUnexpectedEOF):
		c.rerr = fmt.Errorf("%w: frame header cut after %d of %d bytes: %w", ErrProtocol, n, HeaderLen, io.ErrUnexpectedEOF)
		return 0, nil, 0, c.rerr
	default:
		c.rerr = fmt.Errorf("reading frame header (%d of %d bytes): %w", n, HeaderLen, err)
		return 0, nil, 0, c.rerr
	}
	t, flags, length, seq, err := parseHeader(c.hdr[:])
	if err != nil {
		// The stream cannot be resynchronised after a bad header.
		c.rerr = err
		return 0, nil, 0, err
	}
	sealed := flags&FlagSealed != 0
	switch {
	case c.open == nil && (sealed || seq != 0):
		c.rerr = fmt.Errorf("%w: sealed %v frame (sequence %d) before the handshake ended", ErrProtocol, t, seq)
		return 0, nil, 0, c.rerr
	case c.open == nil && length > MaxFrame:
		c.rerr = fmt.Errorf("%w: %v frame of %d bytes exceeds MaxFrame (%d)", ErrProtocol, t, length, MaxFrame)
		return 0, nil, 0, c.rerr
	case c.open != nil && !sealed:
		c.rerr = fmt.Errorf("%w: %v frame in clear after the handshake (injected?)", ErrIntegrity, t)
		return 0, nil, 0, c.rerr
	case c.open != nil && seq != c.recvSeq+1:
		c.rerr = fmt.Errorf("%w: %v frame with sequence %d, expected %d (replayed, reordered or dropped frame)", ErrIntegrity, t, seq, c.recvSeq+1)
		return 0, nil, 0, c.rerr
	case c.open != nil && (length < TagLen || length > MaxFrame+TagLen):
		c.rerr = fmt.Errorf("%w: sealed %v frame of %d bytes, want %d…%d", ErrProtocol, t, length, TagLen, MaxFrame+TagLen)
		return 0, nil, 0, c.rerr
	}
	// length ≤ MaxFrame+TagLen here: a peer cannot make us allocate more.
	payload = make([]byte, length)
	if n, err := io.ReadFull(c.r, payload); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			c.rerr = fmt.Errorf("%w: %v frame cut after %d of %d payload bytes: %w", ErrProtocol, t, n, length, io.ErrUnexpectedEOF)
		} else {
			c.rerr = fmt.Errorf("reading %v payload (%d of %d bytes): %w", t, n, length, err)
		}
		return 0, nil, 0, c.rerr
	}
	if c.open != nil {
		plain, err := c.open.Open(payload[:0], frameNonce(seq), payload, c.hdr[:])
		if err != nil {
			c.rerr = fmt.Errorf("%w: %v frame %d fails authentication (forged or modified on the path)", ErrIntegrity, t, seq)
			return 0, nil, 0, c.rerr
		}
		c.recvSeq = seq
		payload = plain
	}
	if err := checkObject(payload); err != nil {
		// The frame boundary is intact; the caller decides whether to go on.
		return 0, nil, 0, fmt.Errorf("%v frame: %w", t, err)
	}
	return t, payload, int(length), nil
}

// putHeader writes a version 2 header.
func putHeader(b []byte, t MsgType, flags uint16, length uint32, seq uint64) {
	copy(b[0:4], Magic)
	b[4] = Version
	b[5] = byte(t)
	binary.LittleEndian.PutUint16(b[6:8], flags)
	binary.LittleEndian.PutUint32(b[8:12], length)
	binary.LittleEndian.PutUint64(b[12:20], seq)
}

// prefixLen is the part of a header every framing version shares.
const prefixLen = 5

// checkPrefix checks the magic and the version.
func checkPrefix(b []byte) error {
	if string(b[0:4]) != Magic {
		return fmt.Errorf("%w: not an rgaps control stream: magic %q, want %q", ErrProtocol, b[0:4], Magic)
	}
	if b[4] != Version {
		return fmt.Errorf("%w: peer sends control framing version %d, this side speaks only version %d (upgrade the older daemon)", ErrVersion, b[4], Version)
	}
	return nil
}

// parseHeader validates a header in the order of doc.go's table. Whether
// sealing, sequence and length fit the connection's state is the
// caller's check.
func parseHeader(b []byte) (t MsgType, flags uint16, length uint32, seq uint64, err error) {
	if err := checkPrefix(b); err != nil {
		return 0, 0, 0, 0, err
	}
	t = MsgType(b[5])
	flags = binary.LittleEndian.Uint16(b[6:8])
	if flags&^FlagSealed != 0 {
		return 0, 0, 0, 0, fmt.Errorf("%w: %v frame with flags %#04x, only %#04x is defined", ErrProtocol, t, flags, FlagSealed)
	}
	length = binary.LittleEndian.Uint32(b[8:12])
	if length > MaxFrame+TagLen {
		return 0, 0, 0, 0, fmt.Errorf("%w: %v frame of %d bytes exceeds MaxFrame (%d)", ErrProtocol, t, length, MaxFrame)
	}
	if t == 0 {
		return 0, 0, 0, 0, fmt.Errorf("%w: frame of type 0", ErrProtocol)
	}
	return t, flags, length, binary.LittleEndian.Uint64(b[12:20]), nil
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

package control

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type blob struct {
	Data string `json:"data"`
}

// blobOfPayload returns a blob whose JSON encoding is exactly n bytes.
func blobOfPayload(n int) blob {
	const overhead = len(`{"data":""}`)
	return blob{Data: strings.Repeat("x", n-overhead)}
}

func TestRoundTripSizes(t *testing.T) {
	d, a := connPair(t)
	sizes := []int{11, 12, 13, 100, 4095, 4096, 4097, 65535, 65536, 65537, 1<<20 - 1, MaxFrame}
	errc := make(chan error, 1)
	go func() {
		for i, n := range sizes {
			if err := d.Send(MsgType(16+i), blobOfPayload(n)); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	for i, n := range sizes {
		typ, payload, err := a.Recv()
		if err != nil {
			t.Fatalf("size %d: %v", n, err)
		}
		if typ != MsgType(16+i) || len(payload) != n {
			t.Fatalf("size %d: got type %d, %d bytes", n, typ, len(payload))
		}
		var b blob
		if err := Decode(payload, &b); err != nil {
			t.Fatal(err)
		}
		if b != blobOfPayload(n) {
			t.Fatalf("size %d: payload changed", n)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, n := range sizes {
		total += uint64(HeaderLen + n)
	}
	want := Stats{FramesSent: uint64(len(sizes)), BytesSent: total}
	if s := d.Stats(); s != want {
		t.Errorf("sender stats %+v, want %+v", s, want)
	}
	want = Stats{FramesReceived: uint64(len(sizes)), BytesReceived: total}
	if s := a.Stats(); s != want {
		t.Errorf("receiver stats %+v, want %+v", s, want)
	}
}

func TestSendRefuses(t *testing.T) {
	d, _ := connPair(t)
	if err := d.Send(16, blobOfPayload(MaxFrame+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("oversize: %v, want ErrTooLarge", err)
	}
	if err := d.Send(0, blob{}); !errors.Is(err, ErrProtocol) {
		t.Errorf("type 0: %v, want ErrProtocol", err)
	}
	if err := d.Send(16, "a string"); !errors.Is(err, ErrProtocol) {
		t.Errorf("non-object: %v, want ErrProtocol", err)
	}
	if err := d.Send(16, func() {}); err == nil {
		t.Error("unencodable value sent")
	}
	if s := d.Stats(); s.FramesSent != 0 {
		t.Errorf("refused sends counted: %+v", s)
	}
	// Refusals leave the connection usable.
	if err := d.Send(16, blob{}); err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentSend(t *testing.T) {
	d, a := connPair(t)
	const senders, each = 8, 200
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range each {
				// Sizes vary so that frames would tear if writes interleaved.
				if err := d.Send(MsgType(16+s), blob{Data: strings.Repeat("y", (s*each+i)%5000)}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	counts := map[MsgType]int{}
	for range senders * each {
		typ, payload, err := a.Recv()
		if err != nil {
			t.Fatal(err)
		}
		var b blob
		if err := Decode(payload, &b); err != nil {
			t.Fatal(err)
		}
		counts[typ]++
	}
	waitGroup(t, &wg, "senders")
	for s := range senders {
		if counts[MsgType(16+s)] != each {
			t.Errorf("type %d: %d frames, want %d", 16+s, counts[MsgType(16+s)], each)
		}
	}
}

func header(magic string, version, typ byte, flags uint16, length uint32) []byte {
	return headerSeq(magic, version, typ, flags, length, 0)
}

func headerSeq(magic string, version, typ byte, flags uint16, length uint32, seq uint64) []byte {
	b := make([]byte, HeaderLen)
	copy(b, magic)
	b[4], b[5] = version, typ
	binary.LittleEndian.PutUint16(b[6:], flags)
	binary.LittleEndian.PutUint32(b[8:], length)
	binary.LittleEndian.PutUint64(b[12:], seq)
	return b
}

// v1frame is a frame of framing version 1 (a 12-byte header), as a daemon
// of the previous release sends it.
func v1frame(typ byte, payload string) []byte {
	b := make([]byte, 12, 12+len(payload))
	copy(b, Magic)
	b[4], b[5] = 1, typ
	binary.LittleEndian.PutUint32(b[8:], uint32(len(payload)))
	return append(b, payload...)
}

func frame(typ byte, payload string) []byte {
	return append(header(Magic, Version, typ, 0, uint32(len(payload))), payload...)
}

func TestMalformed(t *testing.T) {
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	cases := []struct {
		name  string
		input []byte
		want  []error // all must match
		text  string  // in the message
	}{
		{"bad magic", cat(header("RGCQ", 2, 16, 0, 2), []byte("{}")), []error{ErrProtocol}, `magic "RGCQ"`},
		{"version 1", v1frame(1, `{"version":1,"domain":0,"host_id":"old","name":"","nonce":"AAAA","features":null}`), []error{ErrVersion}, "version 1, this side speaks only version 2"},
		{"version 1 short", v1frame(16, `{}`), []error{ErrVersion}, "version 1"},
		{"version 3", cat(header(Magic, 3, 16, 0, 2), []byte("{}")), []error{ErrVersion}, "version 3"},
		{"version 0", cat(header(Magic, 0, 16, 0, 2), []byte("{}")), []error{ErrVersion}, ""},
		{"flags", cat(header(Magic, 2, 16, 2, 2), []byte("{}")), []error{ErrProtocol}, "flags"},
		{"sealed before handshake", cat(headerSeq(Magic, 2, 16, FlagSealed, 2+TagLen, 1), make([]byte, 2+TagLen)), []error{ErrProtocol}, "before the handshake"},
		{"sequence before handshake", cat(headerSeq(Magic, 2, 16, 0, 2, 5), []byte("{}")), []error{ErrProtocol}, "before the handshake"},
		{"length MaxFrame+1", header(Magic, 2, 16, 0, MaxFrame+1), []error{ErrProtocol}, "MaxFrame"},
		{"length 4 GiB-1", header(Magic, 2, 16, 0, 0xffffffff), []error{ErrProtocol}, "MaxFrame"},
		{"type 0", cat(header(Magic, 2, 0, 0, 2), []byte("{}")), []error{ErrProtocol}, "type 0"},
		{"truncated header", frame(16, "{}")[:7], []error{ErrProtocol, io.ErrUnexpectedEOF}, "header"},
		{"truncated payload", frame(16, `{"data":"abc"}`)[:HeaderLen+5], []error{ErrProtocol, io.ErrUnexpectedEOF}, "payload"},
		{"header only", header(Magic, 2, 16, 0, 10), []error{ErrProtocol, io.ErrUnexpectedEOF}, ""},
		{"garbage", []byte("\x00\xff\x13garbage that goes on and on"), []error{ErrProtocol}, "magic"},
		{"http", []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), []error{ErrProtocol}, "not an rgaps control stream"},
		{"empty payload", frame(16, ""), []error{ErrProtocol}, "not a JSON object"},
		{"array payload", frame(16, "[1,2]"), []error{ErrProtocol}, "not a JSON object"},
		{"broken JSON", frame(16, `{"a":`), []error{ErrProtocol}, "not valid JSON"},
		{"two objects", frame(16, `{}{}`), []error{ErrProtocol}, ""},
		{"clean EOF", nil, []error{io.EOF}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw, peer := tcpPair(t)
			c := NewConn(peer)
			go func() {
				raw.Write(tc.input)
				raw.Close()
			}()
			_, _, err := c.Recv()
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("%v: does not wrap %v", err, w)
				}
			}
			if tc.want[0] == io.EOF && err != io.EOF {
				t.Errorf("clean EOF returned %#v, want io.EOF itself", err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("%q does not say %q", err, tc.text)
			}
		})
	}
}

// TestValidThenEOF checks that a valid frame followed by the end of the
// stream gives the frame, then io.EOF.
func TestValidThenEOF(t *testing.T) {
	raw, peer := tcpPair(t)
	c := NewConn(peer)
	go func() {
		raw.Write(frame(20, `{"data":"x"}`))
		raw.Close()
	}()
	typ, p, err := c.Recv()
	if err != nil || typ != 20 || string(p) != `{"data":"x"}` {
		t.Fatalf("got %v %q %v", typ, p, err)
	}
	if _, _, err := c.Recv(); err != io.EOF {
		t.Fatalf("got %v, want io.EOF", err)
	}
}

// TestStickyError checks that a frame error is not followed by garbage
// interpreted as frames.
func TestStickyError(t *testing.T) {
	raw, peer := tcpPair(t)
	c := NewConn(peer)
	raw.Write(append(header(Magic, 2, 16, 6, 2), frame(16, "{}")...))
	_, _, err1 := c.Recv()
	_, _, err2 := c.Recv()
	if !errors.Is(err1, ErrProtocol) || err2 != err1 {
		t.Fatalf("first %v, then %v", err1, err2)
	}
}

// TestReadDeadline checks that a deadline expiring between frames leaves
// the stream usable.
func TestReadDeadline(t *testing.T) {
	d, a := connPair(t)
	a.SetReadDeadline(time.Now().Add(-time.Second))
	if _, _, err := a.Recv(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("got %v, want a deadline error", err)
	}
	a.SetReadDeadline(time.Time{})
	if err := d.Send(17, blob{Data: "after"}); err != nil {
		t.Fatal(err)
	}
	typ, p, err := a.Recv()
	if err != nil || typ != 17 || string(p) != `{"data":"after"}` {
		t.Fatalf("got %v %q %v", typ, p, err)
	}
}

func TestDecodeStrict(t *testing.T) {
	type msg struct {
		A int    `json:"a"`
		B string `json:"b"`
	}
	good := []string{`{"a":1,"b":"x"}`, ` {"a":2} `, `{}`, "{\"b\":\"y\"}\n"}
	for _, s := range good {
		var m msg
		if err := Decode([]byte(s), &m); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	bad := map[string]string{
		"unknown field":  `{"a":1,"c":2}`,
		"typo":           `{"aa":1}`,
		"trailing":       `{"a":1} x`,
		"trailing value": `{"a":1} {"a":2}`,
		"wrong type":     `{"a":"one"}`,
		"not an object":  `[{"a":1}]`,
		"null":           `null`,
		"empty":          ``,
		"truncated":      `{"a":1`,
	}
	for name, s := range bad {
		var m msg
		if err := Decode([]byte(s), &m); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s (%s): %v, want ErrProtocol", name, s, err)
		}
	}
}

// TestUnknownFieldOverTheWire is the same check end to end: a newer peer's
// extra field is an error, not silently dropped.
func TestUnknownFieldOverTheWire(t *testing.T) {
	d, a := connPair(t)
	if err := d.Send(TypeHello, map[string]any{"version": 1, "surprise": true}); err != nil {
		t.Fatal(err)
	}
	_, p, err := a.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var h Hello
	if err := Decode(p, &h); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "surprise") {
		t.Fatalf("got %v", err)
	}
}

func TestMsgTypeString(t *testing.T) {
	if TypeHello.String() != "hello" || MsgType(42).String() != "type 42" {
		t.Error(TypeHello.String(), MsgType(42).String())
	}
	// The header encoding is what doc.go's table says.
	var b [HeaderLen]byte
	putHeader(b[:], 0x21, FlagSealed, 0x01020304, 0x0a0b0c0d0e0f1011)
	want := []byte{'R', 'G', 'C', 'P', 2, 0x21, 1, 0, 4, 3, 2, 1, 0x11, 0x10, 0x0f, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a}
	if !bytes.Equal(b[:], want) {
		t.Errorf("header % x, want % x", b, want)
	}
	if _, err := json.Marshal(Hello{}); err != nil {
		t.Fatal(err)
	}
}

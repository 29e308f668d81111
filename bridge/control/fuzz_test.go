package control

import (
	"bytes"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"
)

// byteConn is a net.Conn that reads a fixed byte string: fuzzing through a
// real socket would cost a connection per input for no extra coverage of
// the parser.
type byteConn struct{ r *bytes.Reader }

func (c byteConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (byteConn) Write(b []byte) (int, error)      { return len(b), nil }
func (byteConn) Close() error                     { return nil }
func (byteConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (byteConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (byteConn) SetDeadline(time.Time) error      { return nil }
func (byteConn) SetReadDeadline(time.Time) error  { return nil }
func (byteConn) SetWriteDeadline(time.Time) error { return nil }

// allocBound is what one Recv may allocate at most: a payload of MaxFrame,
// the JSON checks and errors. A length field up to 4 GiB must not change it.
const allocBound = MaxFrame + 256<<10

// FuzzRecv reads frames from arbitrary bytes: Recv must never panic, must
// return only frames that validate or the documented errors, and must not
// allocate more than allocBound per frame whatever the header claims.
func FuzzRecv(f *testing.F) {
	f.Add(frame(16, `{"data":"x"}`))
	f.Add(append(frame(byte(TypeHello), `{"version":1,"domain":0,"host_id":"a","name":"","nonce":"AAAA","features":null}`), frame(5, `{"seq":1,"unix_nano":2}`)...))
	f.Add(header(Magic, Version, 16, 0, 0xffffffff))
	f.Add(header(Magic, Version, 16, 0, MaxFrame))
	f.Add(header(Magic, 1, 16, 0, 2))
	f.Add(v1frame(16, `{}`))
	f.Add(append(headerSeq(Magic, Version, 16, FlagSealed, 2+TagLen, 1), make([]byte, 2+TagLen)...))
	f.Add([]byte("RGCP"))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add(frame(4, `{"code":"auth","reason":"x"}{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewConn(byteConn{bytes.NewReader(data)})
		for frames := 0; ; frames++ {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			typ, payload, err := c.Recv()
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > allocBound {
				t.Fatalf("one Recv allocated %d bytes (input %d bytes)", grew, len(data))
			}
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrVersion) {
					t.Fatalf("undocumented error %v", err)
				}
				return
			}
			if typ == 0 || len(payload) > MaxFrame || checkObject(payload) != nil {
				t.Fatalf("accepted frame type %d, %d bytes: %q", typ, len(payload), payload)
			}
			// Whatever Recv accepts, the strict decoders must survive.
			var h Hello
			_ = Decode(payload, &h)
			var r Reject
			_ = Decode(payload, &r)
			if frames > len(data) {
				t.Fatal("more frames than bytes")
			}
		}
	})
}

// FuzzRecvSealed reads arbitrary bytes on a connection past its
// handshake: without the key nothing may be accepted but what the seed
// sealed with it, errors are the documented ones, and allocation stays
// bounded.
func FuzzRecvSealed(f *testing.F) {
	key := bytes.Repeat([]byte{7}, 32)
	aead, err := newAEAD(key)
	if err != nil {
		f.Fatal(err)
	}
	sealed := func(seq uint64, typ byte, payload string) []byte {
		h := headerSeq(Magic, Version, typ, FlagSealed, uint32(len(payload)+TagLen), seq)
		return append(h, aead.Seal(nil, frameNonce(seq), []byte(payload), h)...)
	}
	f.Add(sealed(1, 16, `{"ring":1}`))
	f.Add(append(sealed(1, 16, `{}`), sealed(2, 5, `{"seq":1,"unix_nano":2}`)...))
	f.Add(append(sealed(1, 16, `{}`), sealed(1, 16, `{}`)...))
	f.Add(sealed(2, 16, `{}`))
	f.Add(frame(16, `{}`))
	f.Add(headerSeq(Magic, Version, 16, FlagSealed, 0xffffffff, 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewConn(byteConn{bytes.NewReader(data)})
		if err := c.startSealing(key, key); err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); ; seq++ {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			typ, payload, err := c.Recv()
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > allocBound {
				t.Fatalf("one Recv allocated %d bytes (input %d bytes)", grew, len(data))
			}
			if err != nil {
				if err != io.EOF && !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrVersion) && !errors.Is(err, ErrIntegrity) {
					t.Fatalf("undocumented error %v", err)
				}
				return
			}
			// Only a frame sealed with the key, in sequence, gets through.
			if want := sealed(seq, byte(typ), string(payload)); !bytes.Contains(data, want) {
				t.Fatalf("accepted frame %d (type %d, %q) that was not sealed with the key", seq, typ, payload)
			}
		}
	})
}

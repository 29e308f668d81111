package control

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
)

// tapConn is the dialer's socket as someone on the path sees it: it can
// record what the dialer writes, hold it back, or change it.
type tapConn struct {
	net.Conn
	mu     sync.Mutex
	hold   bool     // keep writes instead of sending them
	held   [][]byte // writes kept (each a header or a body)
	sent   [][]byte // writes sent
	mutate func([]byte)
}

func (c *tapConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	cp := append([]byte(nil), b...)
	if c.hold {
		c.held = append(c.held, cp)
		c.mu.Unlock()
		return len(b), nil
	}
	if c.mutate != nil {
		c.mutate(cp)
	}
	c.sent = append(c.sent, cp)
	c.mu.Unlock()
	return c.Conn.Write(cp)
}

// sealedPair runs a handshake over real TCP with a tap on the dialer's
// side and returns both Conns, sealed.
func sealedPair(t *testing.T) (d, a *Conn, tap *tapConn) {
	t.Helper()
	dn, an := tcpPair(t)
	tap = &tapConn{Conn: dn}
	d, a = NewConn(tap), NewConn(an)
	var wg sync.WaitGroup
	var derr, aerr error
	wg.Go(func() { _, derr = Handshake(d, hsConfig("host-d", true)) })
	wg.Go(func() { _, aerr = Handshake(a, hsConfig("host-a", false)) })
	waitGroup(t, &wg, "handshakes")
	if derr != nil || aerr != nil {
		t.Fatalf("handshake: %v / %v", derr, aerr)
	}
	if !d.Sealed() || !a.Sealed() {
		t.Fatal("connections not sealed after the handshake")
	}
	return d, a, tap
}

// Every frame after the handshake is sealed: a message's text is not on
// the wire, and it arrives intact, in both directions.
func TestSealedRoundTrip(t *testing.T) {
	d, a, tap := sealedPair(t)
	for i := 0; i < 3; i++ {
		if err := d.Send(16, blob{Data: "secret-topic-name"}); err != nil {
			t.Fatal(err)
		}
		typ, p, err := a.Recv()
		if err != nil || typ != 16 || string(p) != `{"data":"secret-topic-name"}` {
			t.Fatalf("got %v %q %v", typ, p, err)
		}
		if err := a.Send(17, blob{Data: "reply"}); err != nil {
			t.Fatal(err)
		}
		if typ, p, err := d.Recv(); err != nil || typ != 17 || string(p) != `{"data":"reply"}` {
			t.Fatalf("got %v %q %v", typ, p, err)
		}
	}
	tap.mu.Lock()
	defer tap.mu.Unlock()
	for _, w := range tap.sent {
		if bytes.Contains(w, []byte("secret-topic-name")) {
			t.Fatal("a message after the handshake went out in clear")
		}
	}
}

// Someone on the path who does not hold the keys cannot inject, change,
// replay, reorder or drop frames: each kills the connection with
// ErrIntegrity and a message saying what happened.
func TestSealedFramesResistThePath(t *testing.T) {
	cases := []struct {
		name   string
		attack func(t *testing.T, d *Conn, tap *tapConn)
		text   string
	}{
		{"injected clear frame", func(t *testing.T, d *Conn, tap *tapConn) {
			tap.Conn.Write(frame(18, `{"ring":1,"addr":"attacker:1"}`))
		}, "in clear after the handshake"},
		{"forged sealed frame", func(t *testing.T, d *Conn, tap *tapConn) {
			tap.Conn.Write(append(headerSeq(Magic, Version, 18, FlagSealed, 40, 1), make([]byte, 40)...))
		}, "fails authentication"},
		{"changed payload", func(t *testing.T, d *Conn, tap *tapConn) {
			tap.mu.Lock()
			tap.mutate = func(b []byte) {
				if len(b) != HeaderLen {
					b[3] ^= 1
				}
			}
			tap.mu.Unlock()
			d.Send(16, blob{Data: "x"})
		}, "fails authentication"},
		{"changed type", func(t *testing.T, d *Conn, tap *tapConn) {
			tap.mu.Lock()
			tap.mutate = func(b []byte) {
				if len(b) == HeaderLen {
					b[5] = 18
				}
			}
			tap.mu.Unlock()
			d.Send(16, blob{Data: "x"})
		}, "fails authentication"},
		{"replayed frame", func(t *testing.T, d *Conn, tap *tapConn) {
			d.Send(16, blob{Data: "x"})
			tap.mu.Lock()
			n := len(tap.sent)
			replay := append(append([]byte(nil), tap.sent[n-2]...), tap.sent[n-1]...)
			tap.mu.Unlock()
			tap.Conn.Write(replay)
		}, "sequence 1, expected 2"},
		{"reordered frames", func(t *testing.T, d *Conn, tap *tapConn) {
			tap.mu.Lock()
			tap.hold = true
			tap.mu.Unlock()
			d.Send(16, blob{Data: "first"})
			d.Send(16, blob{Data: "second"})
			tap.mu.Lock()
			h := tap.held
			tap.mu.Unlock()
			tap.Conn.Write(bytes.Join([][]byte{h[2], h[3], h[0], h[1]}, nil))
		}, "sequence 2, expected 1"},
		{"dropped frame", func(t *testing.T, d *Conn, tap *tapConn) {
			tap.mu.Lock()
			tap.hold = true
			tap.mu.Unlock()
			d.Send(16, blob{Data: "first"})
			d.Send(16, blob{Data: "second"})
			tap.mu.Lock()
			h := tap.held
			tap.mu.Unlock()
			tap.Conn.Write(bytes.Join([][]byte{h[2], h[3]}, nil))
		}, "sequence 2, expected 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, a, tap := sealedPair(t)
			tc.attack(t, d, tap)
			var err error
			for err == nil {
				var typ MsgType
				var p []byte
				typ, p, err = a.Recv()
				if err == nil && (typ != 16 || !strings.Contains(string(p), `"x"`) && tc.name != "replayed frame") {
					t.Fatalf("accepted %v %s", typ, p)
				}
			}
			if !errors.Is(err, ErrIntegrity) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("got %v, want ErrIntegrity saying %q", err, tc.text)
			}
			if _, _, err2 := a.Recv(); err2 != err {
				t.Fatalf("the stream went on after a forged frame: %v", err2)
			}
		})
	}
}

// A daemon of the previous release (framing version 1) is refused with an
// error that names both versions, on the listening side and the dialing
// side.
func TestVersion1PeerRefused(t *testing.T) {
	rec := &logRecorder{}
	l, err := Listen("127.0.0.1:0", hsConfig("host-a", false), slogFor(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write(v1frame(1, `{"version":1,"domain":7,"host_id":"old","name":"","nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","features":null}`))
	eventually(t, "the version 1 peer is logged", func() bool {
		return rec.count("control handshake failed", "version 1", "only version 2") == 1
	})
	// Our side, dialing an old daemon: it answers with its version 1 Hello.
	dn, old := tcpPair(t)
	go old.Write(v1frame(1, `{"version":1,"domain":7,"host_id":"old","name":"","nonce":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=","features":null}`))
	_, err = Handshake(NewConn(dn), hsConfig("host-d", true))
	if !errors.Is(err, ErrVersion) || !strings.Contains(err.Error(), "version 1, this side speaks only version 2") {
		t.Fatalf("got %v, want ErrVersion naming both versions", err)
	}
}

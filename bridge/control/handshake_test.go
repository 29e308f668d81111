package control

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHandshakeOK(t *testing.T) {
	d, a, dc, ac := handshakePair(t, hsConfig("host-d", true), hsConfig("host-a", false))
	if d.err != nil || a.err != nil {
		t.Fatalf("dialer: %v; acceptor: %v", d.err, a.err)
	}
	check := func(got Hello, host string) {
		t.Helper()
		if got.HostID != host || got.Name != host+"-name" || got.Domain != 7 || got.Version != ProtocolVersion ||
			len(got.Nonce) != NonceLen || !slices.Equal(got.Features, []string{"f1"}) {
			t.Errorf("peer hello %+v", got)
		}
	}
	check(d.peer, "host-a")
	check(a.peer, "host-d")
	if bytes.Equal(d.peer.Nonce, a.peer.Nonce) {
		t.Error("both sides used the same nonce")
	}
	// The connection carries messages afterwards, and the handshake's
	// deadline no longer applies.
	if err := dc.Send(16, blob{Data: "hi"}); err != nil {
		t.Fatal(err)
	}
	typ, p, err := ac.Recv()
	if err != nil || typ != 16 || string(p) != `{"data":"hi"}` {
		t.Fatalf("after handshake: %v %q %v", typ, p, err)
	}
}

// TestHandshakeWrongSecret: the acceptor checks the dialer's MAC first, so
// whichever side has the wrong secret, the acceptor fails with ErrAuth and
// the dialer learns it through the Reject: ErrRejected and ErrAuth.
func TestHandshakeWrongSecret(t *testing.T) {
	for _, wrong := range []string{"dialer", "acceptor"} {
		t.Run("wrong on "+wrong, func(t *testing.T) {
			dcfg, acfg := hsConfig("host-d", true), hsConfig("host-a", false)
			other := []byte("another-secret-of-enough-length")
			if wrong == "dialer" {
				dcfg.Secret = other
			} else {
				acfg.Secret = other
			}
			d, a, _, _ := handshakePair(t, dcfg, acfg)
			if !errors.Is(a.err, ErrAuth) || errors.Is(a.err, ErrRejected) {
				t.Errorf("acceptor (verifier): %v, want ErrAuth only", a.err)
			}
			if !errors.Is(d.err, ErrRejected) || !errors.Is(d.err, ErrAuth) {
				t.Errorf("dialer: %v, want ErrRejected wrapping ErrAuth", d.err)
			}
			if d.peer.HostID != "" || a.peer.HostID != "" {
				t.Error("a failed handshake returned a peer")
			}
		})
	}
}

// fakePeer speaks the handshake by hand on raw, for the cases a correct
// implementation cannot produce. Its steps stop at the first error, which
// wait returns: the side under test may legitimately hang up early.
type fakePeer struct {
	t    *testing.T
	c    *Conn
	own  Hello
	peer Hello
	err  error
	done chan struct{}
}

func newFakePeer(t *testing.T, raw net.Conn, host string) *fakePeer {
	own := Hello{Version: ProtocolVersion, Domain: 7, HostID: host, Nonce: bytes.Repeat([]byte{9}, NonceLen)}
	return &fakePeer{t: t, c: NewConn(raw), own: own, done: make(chan struct{})}
}

// start runs script in a goroutine; wait joins it.
func (f *fakePeer) start(script func()) {
	go func() {
		defer close(f.done)
		script()
	}()
}

// wait closes the side under test (so that a fake blocked reading gives
// up) and joins the script.
func (f *fakePeer) wait(tested net.Conn) error {
	f.t.Helper()
	tested.Close()
	select {
	case <-f.done:
	case <-time.After(hangGuard):
		f.t.Fatal("fake peer hung")
	}
	return f.err
}

func (f *fakePeer) send(typ MsgType, v any) {
	if f.err == nil {
		f.err = f.c.Send(typ, v)
	}
}

func (f *fakePeer) recv(want MsgType, v any) {
	if f.err != nil {
		return
	}
	typ, p, err := f.c.Recv()
	switch {
	case err != nil:
		f.err = fmt.Errorf("fake peer waiting for %v: %w", want, err)
	case typ != want:
		f.err = fmt.Errorf("fake peer got %v %s, want %v", typ, p, want)
	default:
		f.err = Decode(p, v)
	}
}

func (f *fakePeer) hellos() {
	f.send(TypeHello, f.own)
	f.recv(TypeHello, &f.peer)
}

// TestHandshakeFakeAcceptor: an acceptor without the secret that skips
// verification and answers with a bogus MAC is caught by the dialer, which
// rejects it (the fake sees ErrAuth's code).
func TestHandshakeFakeAcceptor(t *testing.T) {
	dc, raw := tcpPair(t)
	f := newFakePeer(t, raw, "fake")
	var r Reject
	f.start(func() {
		f.hellos()
		var a Auth
		f.recv(TypeAuth, &a)
		f.send(TypeAuth, Auth{MAC: bytes.Repeat([]byte{1}, 32)})
		f.recv(TypeReject, &r)
	})
	_, err := Handshake(NewConn(dc), hsConfig("host-d", true))
	if !errors.Is(err, ErrAuth) || errors.Is(err, ErrRejected) {
		t.Errorf("dialer: %v, want ErrAuth", err)
	}
	if err := f.wait(dc); err != nil || r.Code != RejectAuth {
		t.Errorf("fake acceptor got %+v, %v", r, err)
	}
}

// TestHandshakeReflection: a fake acceptor that returns the dialer's own
// MAC (a reflection) does not pass, because the MAC binds the role.
func TestHandshakeReflection(t *testing.T) {
	dc, raw := tcpPair(t)
	f := newFakePeer(t, raw, "fake")
	f.start(func() {
		f.hellos()
		var a Auth
		f.recv(TypeAuth, &a)
		f.send(TypeAuth, a)
	})
	if _, err := Handshake(NewConn(dc), hsConfig("host-d", true)); !errors.Is(err, ErrAuth) {
		t.Errorf("reflected MAC: %v, want ErrAuth", err)
	}
	f.wait(dc)
}

func TestMACBindsEverything(t *testing.T) {
	n1, n2 := bytes.Repeat([]byte{1}, NonceLen), bytes.Repeat([]byte{2}, NonceLen)
	th := transcript([]byte(`{"a":1}`), []byte(`{"b":2}`))
	base := computeMAC(testSecret, roleDialer, 7, "a", "b", n1, n2, th)
	variants := map[string][]byte{
		"role":     computeMAC(testSecret, roleAcceptor, 7, "a", "b", n1, n2, th),
		"domain":   computeMAC(testSecret, roleDialer, 8, "a", "b", n1, n2, th),
		"ids":      computeMAC(testSecret, roleDialer, 7, "b", "a", n1, n2, th),
		"nonces":   computeMAC(testSecret, roleDialer, 7, "a", "b", n2, n1, th),
		"boundary": computeMAC(testSecret, roleDialer, 7, "ab", "", n1, n2, th),
		"hellos":   computeMAC(testSecret, roleDialer, 7, "a", "b", n1, n2, transcript([]byte(`{"a":1}`), []byte(`{"b":3}`))),
		"secret":   computeMAC([]byte("0123456789abcdef-other"), roleDialer, 7, "a", "b", n1, n2, th),
	}
	for name, m := range variants {
		if bytes.Equal(m, base) {
			t.Errorf("MAC does not depend on %s", name)
		}
	}
}

func TestHandshakeDomainMismatch(t *testing.T) {
	acfg := hsConfig("host-a", false)
	acfg.Domain = 8
	d, a, _, _ := handshakePair(t, hsConfig("host-d", true), acfg)
	for side, err := range map[string]error{"dialer": d.err, "acceptor": a.err} {
		if !errors.Is(err, ErrDomain) {
			t.Errorf("%s: %v, want ErrDomain", side, err)
		}
	}
}

// TestHandshakeSelf: a daemon that dials its own listener (its address is
// in its peer list) sees its own host id on both ends.
func TestHandshakeSelf(t *testing.T) {
	d, a, _, _ := handshakePair(t, hsConfig("same", true), hsConfig("same", false))
	for side, err := range map[string]error{"dialer": d.err, "acceptor": a.err} {
		if !errors.Is(err, ErrSelf) {
			t.Errorf("%s: %v, want ErrSelf", side, err)
		}
	}
}

func TestHandshakeVersionMismatch(t *testing.T) {
	ac, raw := tcpPair(t)
	f := newFakePeer(t, raw, "future")
	f.own.Version = ProtocolVersion + 1
	var r Reject
	f.start(func() {
		f.hellos()
		f.recv(TypeReject, &r)
	})
	if _, err := Handshake(NewConn(ac), hsConfig("host-a", false)); !errors.Is(err, ErrVersion) {
		t.Errorf("got %v, want ErrVersion", err)
	}
	if err := f.wait(ac); err != nil || r.Code != RejectVersion {
		t.Errorf("peer got %+v, %v", r, err)
	}
}

func TestHandshakeBadHellos(t *testing.T) {
	cases := map[string]func(*Hello){
		"short nonce":   func(h *Hello) { h.Nonce = h.Nonce[:8] },
		"no nonce":      func(h *Hello) { h.Nonce = nil },
		"empty host id": func(h *Hello) { h.HostID = "" },
		"long host id":  func(h *Hello) { h.HostID = strings.Repeat("h", 300) },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			ac, raw := tcpPair(t)
			f := newFakePeer(t, raw, "bad")
			mutate(&f.own)
			f.start(f.hellos)
			if _, err := Handshake(NewConn(ac), hsConfig("host-a", false)); !errors.Is(err, ErrProtocol) {
				t.Errorf("got %v, want ErrProtocol", err)
			}
			f.wait(ac)
		})
	}
}

// TestHandshakeUnexpectedMessage: a Welcome where the Auth belongs.
func TestHandshakeUnexpectedMessage(t *testing.T) {
	ac, raw := tcpPair(t)
	f := newFakePeer(t, raw, "eager")
	f.start(func() {
		f.hellos()
		f.send(TypeWelcome, Welcome{})
	})
	if _, err := Handshake(NewConn(ac), hsConfig("host-a", false)); !errors.Is(err, ErrProtocol) {
		t.Errorf("got %v, want ErrProtocol", err)
	}
	f.wait(ac)
}

// TestHandshakeSilentPeer: a peer that connects and sends nothing makes the
// handshake fail at its deadline instead of hanging.
func TestHandshakeSilentPeer(t *testing.T) {
	for _, dialer := range []bool{true, false} {
		c, _ := tcpPair(t)
		cfg := hsConfig("host", dialer)
		cfg.Timeout = 100 * time.Millisecond
		errc := make(chan error, 1)
		go func() { _, err := Handshake(NewConn(c), cfg); errc <- err }()
		select {
		case err := <-errc:
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("dialer=%v: got %v, want a deadline error", dialer, err)
			}
		case <-time.After(hangGuard):
			t.Fatal("handshake with a silent peer hung")
		}
	}
}

// TestHandshakeGarbage: a peer speaking another protocol fails at once.
func TestHandshakeGarbage(t *testing.T) {
	for _, garbage := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"} {
		c, raw := tcpPair(t)
		go func() {
			raw.Write([]byte(garbage))
			io.Copy(io.Discard, raw)
		}()
		_, err := Handshake(NewConn(c), hsConfig("host", false))
		if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "not an rgaps control stream") {
			t.Errorf("%q: got %v", garbage, err)
		}
	}
}

// TestHandshakeConfigChecked: a bad config fails before any byte is sent.
func TestHandshakeConfigChecked(t *testing.T) {
	c, _ := connPair(t)
	for name, cfg := range map[string]HandshakeConfig{
		"short secret": {Secret: []byte("short"), HostID: "h"},
		"no secret":    {HostID: "h"},
		"no host id":   {Secret: testSecret},
	} {
		if _, err := Handshake(c, cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want ErrConfig", name, err)
		}
	}
	if s := c.Stats(); s.FramesSent != 0 {
		t.Errorf("sent %d frames with a bad config", s.FramesSent)
	}
}

func TestListener(t *testing.T) {
	rec := &logRecorder{}
	cfg := hsConfig("server", false)
	ln, err := Listen("127.0.0.1:0", cfg, slogFor(rec))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()

	// A silent client holds a handshake open; others must still get through.
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	// A garbage client and a client with the wrong secret fail and are logged.
	garbage, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	garbage.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	defer garbage.Close()
	eventually(t, "the garbage client to be logged", func() bool {
		return rec.count("WARN control handshake failed", "remote="+garbage.LocalAddr().String(), "not an rgaps control stream") == 1
	})

	dial := func(secret []byte, host string) (*Conn, Hello, error) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c := NewConn(nc)
		hc := hsConfig(host, true)
		hc.Secret = secret
		peer, err := Handshake(c, hc)
		if err != nil {
			c.Close()
		}
		return c, peer, err
	}
	if _, _, err := dial([]byte("wrong-secret-wrong-secret"), "intruder"); !errors.Is(err, ErrRejected) {
		t.Errorf("wrong secret: %v, want ErrRejected", err)
	}
	eventually(t, "the wrong secret to be logged", func() bool {
		return rec.count("WARN control handshake failed", "remote=", "peer failed authentication") == 1
	})

	for i := range 2 {
		dc, peer, err := dial(testSecret, "client")
		if err != nil {
			t.Fatalf("good client %d: %v", i, err)
		}
		ac, apeer, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if peer.HostID != "server" || apeer.HostID != "client" || ac.RemoteAddr().String() != dc.LocalAddr().String() {
			t.Errorf("peers %q %q, addresses %v %v", peer.HostID, apeer.HostID, ac.RemoteAddr(), dc.LocalAddr())
		}
		dc.Close()
		ac.Close()
	}

	// An authenticated connection nobody accepts is closed by Close.
	pending, _, err := dial(testSecret, "late")
	if err != nil {
		t.Fatal(err)
	}
	defer pending.Close()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ln.Accept(); !errors.Is(err, ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
	pending.SetReadDeadline(time.Now().Add(hangGuard))
	if _, _, err := pending.Recv(); err != io.EOF {
		t.Errorf("unaccepted connection after Close: %v, want io.EOF", err)
	}
	if err := ln.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestListenConfigChecked(t *testing.T) {
	if _, err := Listen("127.0.0.1:0", HandshakeConfig{HostID: "h", Secret: []byte("x")}, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("got %v, want ErrConfig", err)
	}
}

// TestHandshakeAdmit: Admit judges only an authenticated peer; its Reject
// reaches the peer (ErrRejected and the code's sentinel, the reason
// included) and fails this side's handshake with the sentinel alone.
func TestHandshakeAdmit(t *testing.T) {
	refuse := func(calls *atomic.Int32, seen *Hello) func(Hello, string) *Reject {
		return func(p Hello, remote string) *Reject {
			calls.Add(1)
			*seen = p
			if remote == "" {
				t.Error("Admit got no remote address")
			}
			return &Reject{Code: RejectDuplicate, Reason: "held by instance 00000000000000aa"}
		}
	}
	for _, side := range []string{"acceptor", "dialer"} {
		t.Run(side+" refuses", func(t *testing.T) {
			dcfg, acfg := hsConfig("host-d", true), hsConfig("host-a", false)
			var calls atomic.Int32
			var seen Hello
			refuser, refused := &acfg, "host-d"
			if side == "dialer" {
				refuser, refused = &dcfg, "host-a"
			}
			refuser.Admit = refuse(&calls, &seen)
			d, a, _, _ := handshakePair(t, dcfg, acfg)
			own, peer := a.err, d.err
			if side == "dialer" {
				own, peer = d.err, a.err
			}
			if !errors.Is(own, ErrDuplicate) || errors.Is(own, ErrRejected) {
				t.Errorf("refusing side: %v, want ErrDuplicate only", own)
			}
			if !errors.Is(peer, ErrRejected) || !errors.Is(peer, ErrDuplicate) || !strings.Contains(fmt.Sprint(peer), "held by instance 00000000000000aa") {
				t.Errorf("refused side: %v, want ErrRejected and ErrDuplicate with the reason", peer)
			}
			if calls.Load() != 1 || seen.HostID != refused {
				t.Errorf("Admit called %d times with %q, want once with %q", calls.Load(), seen.HostID, refused)
			}
		})
	}
	t.Run("admitted", func(t *testing.T) {
		dcfg, acfg := hsConfig("host-d", true), hsConfig("host-a", false)
		var calls atomic.Int32
		admit := func(Hello, string) *Reject { calls.Add(1); return nil }
		dcfg.Admit, acfg.Admit = admit, admit
		d, a, _, _ := handshakePair(t, dcfg, acfg)
		if d.err != nil || a.err != nil || calls.Load() != 2 {
			t.Errorf("dialer %v, acceptor %v, Admit called %d times; want both up, 2 calls", d.err, a.err, calls.Load())
		}
	})
	t.Run("unauthenticated peer is not judged", func(t *testing.T) {
		dcfg, acfg := hsConfig("host-d", true), hsConfig("host-a", false)
		dcfg.Secret = []byte("another-secret-of-enough-length")
		var calls atomic.Int32
		var seen Hello
		dcfg.Admit, acfg.Admit = refuse(&calls, &seen), refuse(&calls, &seen)
		d, a, _, _ := handshakePair(t, dcfg, acfg)
		if !errors.Is(a.err, ErrAuth) || !errors.Is(d.err, ErrAuth) || calls.Load() != 0 {
			t.Errorf("dialer %v, acceptor %v, Admit called %d times; want ErrAuth on both, no call", d.err, a.err, calls.Load())
		}
	})
}

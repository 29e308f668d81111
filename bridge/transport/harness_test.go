package transport_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// variant is one transport configuration the conformance suite runs
// against.
type variant struct {
	name string
	// open opens the provider for local address node.
	open func(node string, timeout time.Duration) (transport.Provider, error)
	// listenAddr is where a listener on node listens.
	listenAddr func(node string) string
	// badDial and badListen are addresses that must fail at once or
	// within the provider's timeout.
	badDial, badListen []string
	shm                bool // check /dev/shm for files libfabric shm left
	noSleep            bool // no wait object: Sleep says ErrNotSupported (sleep_test.go)
}

func fabricVariant(name, prov string, opts fabric.Options) variant {
	v := variant{
		name: name,
		open: func(node string, timeout time.Duration) (transport.Provider, error) {
			o := opts
			o.Node, o.Timeout, o.NamePrefix = node, timeout, testutil.Prefix()
			p, err := fabric.Open(prov, o)
			if err != nil {
				return nil, err
			}
			return p, nil
		},
	}
	if prov == "shm" {
		v.shm, v.noSleep = true, true // libfabric 1.17's shm CQs take FI_WAIT_NONE, UNSPEC and YIELD only
		v.listenAddr = func(string) string { return "" }
		v.badDial = []string{"", "bad/name", "fi_ns://", testutil.Prefix() + "_nobody_listens"}
		v.badListen = []string{"bad/name", "fi_ns://"}
	} else {
		v.listenAddr = func(node string) string { return net.JoinHostPort(node, "0") }
		v.badDial = []string{"", "nonsense", "127.0.0.1:notaport", "127.0.0.1:0", "127.0.0.1:1", "[::1"}
		v.badListen = []string{"300.1.1.1:0", "nonsense", "127.0.0.1:99999"}
	}
	return v
}

// verbsPaths forces what verbs needs (FABRIC_NOTES pitfall 9): receives
// pre-posted for remote CQ data, descriptors on every local buffer, and
// fenced writes.
var verbsPaths = fabric.Options{ForceRxCQData: true, ForceMRLocal: true, ForceFence: true}

var variants = []variant{
	fabricVariant("fabric-tcp", "tcp", fabric.Options{}),
	fabricVariant("fabric-tcp-verbspaths", "tcp", verbsPaths),
	fabricVariant("fabric-shm", "shm", fabric.Options{}),
	fabricVariant("fabric-shm-verbspaths", "shm", verbsPaths),
	{
		name: "plaintcp",
		open: func(node string, timeout time.Duration) (transport.Provider, error) {
			return transport.NewPlainTCP(transport.PlainTCPOptions{Timeout: timeout}), nil
		},
		listenAddr: func(node string) string { return net.JoinHostPort(node, "0") },
		badDial:    []string{"", "nonsense", "127.0.0.1:notaport", "127.0.0.1:0", "127.0.0.1:1", "[::1"},
		badListen:  []string{"300.1.1.1:0", "nonsense", "127.0.0.1:99999"},
	},
}

func variantNamed(name string) *variant {
	for i := range variants {
		if variants[i].name == name {
			return &variants[i]
		}
	}
	return nil
}

// skipUnsupported skips on ErrNotSupported (with the reason), unless
// RGAPS_REQUIRE_FABRIC=1, and fails on any other error.
func skipUnsupported(t testing.TB, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if errors.Is(err, transport.ErrNotSupported) && os.Getenv("RGAPS_REQUIRE_FABRIC") != "1" {
		t.Skipf("not supported here: %v", err)
	}
	t.Fatal(err)
}

// msg is a side-channel message; Case keeps a late message of one case
// from being read by the next.
type msg struct {
	Case string
	Kind string
	Vals []uint64 `json:",omitempty"`
	Str  string   `json:",omitempty"`
}

// ctl is the out-of-band channel between the two sides of a case (what the
// daemon's control plane is in production): JSON lines over a connection,
// read by one goroutine so a side can poll its endpoint while it waits.
type ctl struct {
	conn net.Conn
	mu   sync.Mutex // guards enc
	enc  *json.Encoder
	in   chan msg // closed when the connection ends
}

func newCtl(conn net.Conn) *ctl {
	c := &ctl{conn: conn, enc: json.NewEncoder(conn), in: make(chan msg, 4096)}
	go func() {
		dec := json.NewDecoder(conn)
		for {
			var m msg
			if err := dec.Decode(&m); err != nil {
				close(c.in)
				return
			}
			c.in <- m
		}
	}()
	return c
}

func (c *ctl) send(m msg) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	return c.enc.Encode(m)
}

// side is one end of a case: a provider, the endpoint, its own region and
// the peer's.
type side struct {
	v        *variant
	caseName string
	dialer   bool
	node     string
	timeout  time.Duration // bounds every wait of the case
	prov     transport.Provider
	ep       transport.Endpoint
	own      transport.Region
	peer     transport.RemoteRegion
	c        *ctl
	stash    []msg    // messages that came before they were awaited
	got      []uint64 // immediates polled while waiting, not yet consumed
	pollErr  error    // the endpoint's error seen while waiting
	peerDone *msg     // the peer's "done", if it came early
	buf      [256]uint64
}

func (s *side) send(kind string, vals ...uint64) error {
	return s.c.send(msg{Case: s.caseName, Kind: kind, Vals: vals})
}

func (s *side) sendStr(kind, str string) error {
	return s.c.send(msg{Case: s.caseName, Kind: kind, Str: str})
}

// pollOnce polls the endpoint (if any) into s.got; true if it got any.
func (s *side) pollOnce() bool {
	if s.ep == nil || s.pollErr != nil {
		return false
	}
	n, err := s.ep.Poll(s.buf[:])
	s.got = append(s.got, s.buf[:n]...)
	if err != nil {
		s.pollErr = err
	}
	return n > 0
}

// await waits for a message of one of kinds, polling the endpoint
// meanwhile when poll is set (a side that waits must keep progressing:
// FABRIC_NOTES pitfall 1).
func (s *side) await(poll bool, kinds ...string) (msg, error) {
	want := func(m msg) bool {
		for _, k := range kinds {
			if m.Kind == k {
				return true
			}
		}
		return false
	}
	for i, m := range s.stash {
		if want(m) {
			s.stash = append(s.stash[:i], s.stash[i+1:]...)
			return m, nil
		}
	}
	deadline := time.Now().Add(s.timeout)
	for spins := 0; ; spins++ {
		select {
		case m, ok := <-s.c.in:
			if !ok {
				return msg{}, fmt.Errorf("side channel closed while waiting for %v", kinds)
			}
			switch {
			case m.Case != s.caseName:
			case want(m):
				return m, nil
			case m.Kind == "done":
				s.peerDone = &m
				return msg{}, fmt.Errorf("peer finished the case while this side waited for %v (peer: %q)", kinds, m.Str)
			default:
				s.stash = append(s.stash, m)
			}
			spins = 0
			continue
		default:
		}
		if poll && s.pollOnce() {
			spins = 0
			continue
		}
		if time.Now().After(deadline) {
			return msg{}, fmt.Errorf("timed out after %v waiting for %v", s.timeout, kinds)
		}
		transport.Backoff(spins)
	}
}

// imms returns the next n immediates.
func (s *side) imms(n int) ([]uint64, error) {
	deadline := time.Now().Add(s.timeout)
	for spins := 0; len(s.got) < n; spins++ {
		if s.pollErr != nil {
			return nil, fmt.Errorf("after %d of %d immediates: %w", len(s.got), n, s.pollErr)
		}
		if s.pollOnce() {
			spins = 0
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("got %d of %d immediates within %v", len(s.got), n, s.timeout)
		}
		transport.Backoff(spins)
	}
	out := append([]uint64(nil), s.got[:n]...)
	s.got = s.got[n:]
	return out, nil
}

// connect sets up the endpoint: the listener sends its address over the
// side channel, the dialer dials it; both then exchange regions.
func (s *side) connect(regionSize int, register bool) error {
	if s.dialer {
		m, err := s.await(false, "addr")
		if err != nil {
			return err
		}
		if s.ep, err = s.prov.Dial(m.Str); err != nil {
			s.sendStr("abort", err.Error())
			return fmt.Errorf("dial %q: %w", m.Str, err)
		}
	} else {
		ln, err := s.prov.Listen(s.v.listenAddr(s.node))
		if err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		type result struct {
			ep  transport.Endpoint
			err error
		}
		ch := make(chan result, 1)
		go func() {
			ep, err := ln.Accept()
			ch <- result{ep, err}
		}()
		if err := s.sendStr("addr", ln.Addr()); err != nil {
			ln.Close()
			<-ch
			return err
		}
		// Accept blocks: an abort from the dialer or the case timeout
		// closes the listener, which ends it.
		var r result
		deadline := time.After(s.timeout)
	wait:
		for {
			select {
			case r = <-ch:
				break wait
			case m, ok := <-s.c.in:
				if !ok || (m.Case == s.caseName && m.Kind == "abort") {
					ln.Close()
					r = <-ch
					if r.err == nil {
						r.ep.Close()
					}
					return fmt.Errorf("dialer gave up: %s", m.Str)
				}
				if m.Case == s.caseName {
					s.stash = append(s.stash, m)
				}
			case <-deadline:
				ln.Close()
				r = <-ch
				if r.err == nil {
					r.ep.Close()
				}
				return fmt.Errorf("no connection within %v", s.timeout)
			}
		}
		if err := ln.Close(); err != nil {
			return fmt.Errorf("closing the listener: %w", err)
		}
		if r.err != nil {
			return fmt.Errorf("accept: %w", r.err)
		}
		s.ep = r.ep
	}
	var err error
	if register {
		var b []byte
		if b, err = transport.MapAnon(regionSize); err != nil {
			return err
		}
		if s.own, err = s.prov.Register(b); err != nil {
			transport.Unmap(b)
			return fmt.Errorf("register: %w", err)
		}
		s.own = unmapOnClose{s.own, b}
	} else if s.own, err = s.prov.Alloc(regionSize); err != nil {
		return fmt.Errorf("alloc: %w", err)
	}
	// A RemoteRegion is plain data; it travels in its binary form.
	d, _ := s.own.Desc().MarshalBinary()
	vals := []uint64{binary.LittleEndian.Uint64(d), binary.LittleEndian.Uint64(d[8:]), binary.LittleEndian.Uint64(d[16:])}
	if err := s.send("region", vals...); err != nil {
		return err
	}
	m, err := s.await(true, "region")
	if err != nil {
		return err
	}
	if len(m.Vals) != 3 {
		return fmt.Errorf("region message with %d values", len(m.Vals))
	}
	for i, v := range m.Vals {
		binary.LittleEndian.PutUint64(d[8*i:], v)
	}
	return s.peer.UnmarshalBinary(d)
}

// unmapOnClose is a caller-registered region: the caller unmaps its memory
// after the provider deregistered it.
type unmapOnClose struct {
	transport.Region
	b []byte
}

func (u unmapOnClose) Close() error {
	return errors.Join(u.Region.Close(), transport.Unmap(u.b))
}

// finish is the end-of-case barrier: each side says it is done (with its
// error, if any) and waits, still polling, until the peer is done too, so
// no side closes while the other still needs it to progress.
func (s *side) finish(caseErr error) error {
	str := ""
	if caseErr != nil {
		str = caseErr.Error()
	}
	var errs []error
	if err := s.sendStr("done", str); err != nil {
		errs = append(errs, fmt.Errorf("sending done: %w", err))
	} else if s.peerDone == nil {
		if _, err := s.await(true, "done"); err != nil {
			errs = append(errs, fmt.Errorf("waiting for the peer to finish: %w", err))
		}
	}
	if s.ep != nil {
		if err := s.ep.Close(); err != nil && !errors.Is(err, transport.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing the endpoint: %w", err))
		}
	}
	if s.own != nil {
		if err := s.own.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the region: %w", err))
		}
	}
	return errors.Join(errs...)
}

// runSide plays one side of cs on a fresh provider.
func runSide(v *variant, cs *testCase, dialer bool, node string, c *ctl) error {
	providerTimeout := 20 * time.Second
	if cs.providerTimeout > 0 {
		providerTimeout = cs.providerTimeout
	}
	prov, err := v.open(node, providerTimeout)
	if err != nil {
		return err
	}
	s := &side{v: v, caseName: cs.name, dialer: dialer, node: node, timeout: 60 * time.Second, prov: prov, c: c}
	if !cs.noConn {
		err = s.connect(cs.region, cs.register && !dialer)
	}
	if err == nil {
		if dialer {
			err = cs.dialer(s)
		} else if cs.listener != nil {
			err = cs.listener(s)
		}
	}
	role := "listener"
	if dialer {
		role = "dialer"
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", role, err)
	}
	if ferr := s.finish(err); ferr != nil {
		err = errors.Join(err, fmt.Errorf("%s: %w", role, ferr))
	}
	if cerr := prov.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("%s: closing the provider: %w", role, cerr))
	}
	return err
}

// shmLeftovers lists files in /dev/shm that libfabric shm made for this
// process: its default names are <pid>:<uid>:<index> (FABRIC_NOTES
// pitfall 7); ours start with the test prefix.
func shmLeftovers() []string {
	ents, _ := os.ReadDir("/dev/shm")
	var out []string
	pid := fmt.Sprint(os.Getpid())
	for _, e := range ents {
		n := e.Name()
		if strings.HasPrefix(n, pid+":") || strings.HasPrefix(n, testutil.Prefix()+"_f") {
			out = append(out, n)
		}
	}
	return out
}

package transport_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
)

// testCase is one conformance case, written as its two halves so the same
// code runs with both sides in this process and with each side in its own
// process and network namespace. The dialer is the writer unless the case
// says otherwise; both halves return what went wrong on their side.
type testCase struct {
	name     string
	region   int  // bytes each side allocates (and the peer may write)
	register bool // the listener registers caller memory instead of Alloc
	noConn   bool // the halves set up no connection themselves
	// providerTimeout replaces the default 20 s provider timeout (cases
	// that wait for a timeout on purpose shorten it).
	providerTimeout  time.Duration
	dialer, listener func(s *side) error
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// fill writes deterministic pseudo-random bytes.
func fill(b []byte, seed uint64) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	i := 0
	for ; i+8 <= len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], r.Uint64())
	}
	for ; i < len(b); i++ {
		b[i] = byte(r.Uint64())
	}
}

func memset(b []byte, v byte) {
	for i := range b {
		b[i] = v
	}
}

const canary = 0xEE

// writeImmCase writes one message of size bytes with an immediate and has
// the receiver check its CRC and the canaries around it.
func writeImmCase(size int, register bool) testCase {
	const srcOff, dstOff = 64, 128
	imm := uint64(0xC0DE0000_00000000) | uint64(size)
	return testCase{
		name:     fmt.Sprintf("writeimm-%s", sizeName(size)),
		region:   size + 4096,
		register: register,
		dialer: func(s *side) error {
			src := s.own.Bytes()[srcOff : srcOff+size]
			fill(src, uint64(size))
			if err := s.send("crc", uint64(crc32.Checksum(src, crcTable))); err != nil {
				return err
			}
			if _, err := s.await(true, "ready"); err != nil {
				return err
			}
			if err := s.ep.WriteImm(src, s.own, s.peer, dstOff, imm); err != nil {
				return fmt.Errorf("WriteImm: %w", err)
			}
			if err := s.ep.Flush(s.timeout); err != nil {
				return fmt.Errorf("Flush: %w", err)
			}
			if st := s.ep.Stats(); st.Writes != 1 || st.Completions != 1 {
				return fmt.Errorf("stats after one write: %+v", st)
			}
			return nil
		},
		listener: func(s *side) error {
			memset(s.own.Bytes(), canary)
			m, err := s.await(true, "crc")
			if err != nil {
				return err
			}
			if err := s.send("ready"); err != nil {
				return err
			}
			got, err := s.imms(1)
			if err != nil {
				return err
			}
			if got[0] != imm {
				return fmt.Errorf("immediate %#x, want %#x", got[0], imm)
			}
			b := s.own.Bytes()
			if c := crc32.Checksum(b[dstOff:dstOff+size], crcTable); uint64(c) != m.Vals[0] {
				return fmt.Errorf("CRC of the %d bytes received: %#x, sender's %#x", size, c, m.Vals[0])
			}
			for _, r := range [][2]int{{0, dstOff}, {dstOff + size, len(b)}} {
				for i := r[0]; i < r[1]; i++ {
					if b[i] != canary {
						return fmt.Errorf("byte %d outside the written range changed to %#x", i, b[i])
					}
				}
			}
			return nil
		},
	}
}

func sizeName(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	return fmt.Sprintf("%dKiB", n>>10)
}

// orderCase posts many writes back to back; the receiver checks that the
// immediates come in posting order and that each slot holds its message.
func orderCase() testCase {
	const n, slot = 2000, 64
	return testCase{
		name:   "imm-order",
		region: n*slot + 4096,
		dialer: func(s *side) error {
			if _, err := s.await(true, "ready"); err != nil {
				return err
			}
			b := s.own.Bytes()
			for i := 0; i < n; i++ {
				src := b[i*slot : (i+1)*slot]
				binary.LittleEndian.PutUint64(src, uint64(i))
				fill(src[8:], uint64(i))
				if err := s.ep.WriteImm(src, s.own, s.peer, uint64(i*slot), uint64(i)); err != nil {
					return fmt.Errorf("WriteImm %d: %w", i, err)
				}
			}
			return s.ep.Flush(s.timeout)
		},
		listener: func(s *side) error {
			if err := s.send("ready"); err != nil {
				return err
			}
			got, err := s.imms(n)
			if err != nil {
				return err
			}
			want := make([]byte, slot)
			for i, imm := range got {
				if imm != uint64(i) {
					return fmt.Errorf("immediate %d is %d: out of order", i, imm)
				}
				binary.LittleEndian.PutUint64(want, uint64(i))
				fill(want[8:], uint64(i))
				if string(s.own.Bytes()[i*slot:(i+1)*slot]) != string(want) {
					return fmt.Errorf("slot %d does not hold message %d", i, i)
				}
			}
			return nil
		},
	}
}

// writeThenImmCase checks that a Write without immediate is visible when a
// later WriteImm's immediate arrives (the ring's write-twice tail update),
// and that a Write lands in the memory of a sender that only polls (the
// head write-back).
func writeThenImmCase() testCase {
	const rounds = 300
	const headOff, dataOff = 0, 4096
	return testCase{
		name:   "write-then-imm",
		region: 64 << 10,
		dialer: func(s *side) error {
			if _, err := s.await(true, "ready"); err != nil {
				return err
			}
			b := s.own.Bytes()
			for i := 0; i < rounds; i++ {
				// Distinct source slots: a source stays untouched until
				// its write completes.
				word := b[dataOff+i*16 : dataOff+i*16+8]
				data := b[dataOff+i*16+8 : dataOff+i*16+16]
				binary.LittleEndian.PutUint64(word, uint64(i+1))
				binary.LittleEndian.PutUint64(data, ^uint64(i))
				if err := s.ep.Write(word, s.own, s.peer, headOff); err != nil {
					return fmt.Errorf("Write %d: %w", i, err)
				}
				if err := s.ep.WriteImm(data, s.own, s.peer, uint64(dataOff+i*8), uint64(i)); err != nil {
					return fmt.Errorf("WriteImm %d: %w", i, err)
				}
			}
			// The receiver writes its head back; it lands while we poll.
			deadline := time.Now().Add(s.timeout)
			for spins := 0; binary.LittleEndian.Uint64(b[headOff:]) != rounds; spins++ {
				s.pollOnce()
				if s.pollErr != nil {
					return s.pollErr
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("head write-back not visible: %d", binary.LittleEndian.Uint64(b[headOff:]))
				}
				transport.Backoff(spins)
			}
			if len(s.got) != 0 {
				return fmt.Errorf("a Write without immediate produced immediates %v", s.got)
			}
			return nil
		},
		listener: func(s *side) error {
			if err := s.send("ready"); err != nil {
				return err
			}
			b := s.own.Bytes()
			for i := 0; i < rounds; i++ {
				got, err := s.imms(1)
				if err != nil {
					return err
				}
				if got[0] != uint64(i) {
					return fmt.Errorf("immediate %d is %d", i, got[0])
				}
				if w := binary.LittleEndian.Uint64(b[headOff:]); w < uint64(i+1) {
					return fmt.Errorf("immediate %d arrived before its preceding Write: word is %d", i, w)
				}
				if d := binary.LittleEndian.Uint64(b[dataOff+i*8:]); d != ^uint64(i) {
					return fmt.Errorf("data of write %d is %#x", i, d)
				}
			}
			head := b[len(b)-8:]
			binary.LittleEndian.PutUint64(head, rounds)
			if err := s.ep.Write(head, s.own, s.peer, headOff); err != nil {
				return fmt.Errorf("head write-back: %w", err)
			}
			return s.ep.Flush(s.timeout)
		},
	}
}

// eagainCase posts small writes while the receiver does not poll, until
// the transmit queue is full and the retry path ran; then the receiver
// drains and checks everything arrived in order.
func eagainCase() testCase {
	const size, slots, minWrites, maxWrites = 4096, 64, 1000, 200000
	return testCase{
		name:   "eagain",
		region: size*slots + 4096,
		dialer: func(s *side) error {
			if _, err := s.await(true, "ready"); err != nil {
				return err
			}
			src := s.own.Bytes()[:size]
			fill(src, 7)
			// The receiver waits for "go" before it polls at all; a
			// watcher sends it once the retry path ran (or this side
			// does, when the loop ends first).
			var goSent atomic.Bool
			sendGo := func() {
				if goSent.CompareAndSwap(false, true) {
					s.send("go")
				}
			}
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Microsecond):
					}
					if s.ep.Stats().Retries > 0 {
						sendGo()
						return
					}
				}
			}()
			n := 0
			var err error
			for ; n < maxWrites && (n < minWrites || s.ep.Stats().Retries == 0); n++ {
				if err = s.ep.WriteImm(src, s.own, s.peer, uint64(n%slots*size), uint64(n)); err != nil {
					err = fmt.Errorf("WriteImm %d: %w", n, err)
					break
				}
			}
			close(stop)
			wg.Wait()
			sendGo()
			if err != nil {
				return err
			}
			if err := s.send("count", uint64(n)); err != nil {
				return err
			}
			if err := s.ep.Flush(s.timeout); err != nil {
				return err
			}
			if st := s.ep.Stats(); st.Retries == 0 {
				return fmt.Errorf("%d writes never met a full transmit queue: %+v", n, st)
			}
			return nil
		},
		listener: func(s *side) error {
			if err := s.send("ready"); err != nil {
				return err
			}
			if _, err := s.await(false, "go"); err != nil {
				return err
			}
			m, err := s.await(true, "count")
			if err != nil {
				return err
			}
			got, err := s.imms(int(m.Vals[0]))
			if err != nil {
				return err
			}
			for i, imm := range got {
				if imm != uint64(i) {
					return fmt.Errorf("immediate %d is %d", i, imm)
				}
			}
			return nil
		},
	}
}

// boundsCase: writes that do not fit the remote region fail before
// anything is sent; the endpoint stays usable.
func boundsCase() testCase {
	const region = 4096
	return testCase{
		name:   "bounds",
		region: region,
		dialer: func(s *side) error {
			src := s.own.Bytes()[:16]
			checks := []struct {
				what string
				err  error
				want error
			}{
				{"WriteImm past the end", s.ep.WriteImm(src, s.own, s.peer, region-8, 1), transport.ErrOutOfBounds},
				{"Write past the end", s.ep.Write(src, s.own, s.peer, region+1), transport.ErrOutOfBounds},
				{"WriteImm at a wrapping offset", s.ep.WriteImm(src, s.own, s.peer, ^uint64(0)-4, 2), transport.ErrOutOfBounds},
				{"Write into a region of length 0", s.ep.Write(src, s.own, transport.RemoteRegion{Addr: s.peer.Addr, Key: s.peer.Key}, 0), transport.ErrOutOfBounds},
			}
			big, err := s.prov.Alloc(transport.MaxMessage + 1)
			if err != nil {
				return err
			}
			defer big.Close()
			huge := transport.RemoteRegion{Addr: s.peer.Addr, Key: s.peer.Key, Len: 1 << 40}
			checks = append(checks, struct {
				what string
				err  error
				want error
			}{"WriteImm of MaxMessage+1", s.ep.WriteImm(big.Bytes(), big, huge, 0, 3), transport.ErrTooLarge})
			for _, c := range checks {
				if !errors.Is(c.err, c.want) {
					return fmt.Errorf("%s: %v, want %v", c.what, c.err, c.want)
				}
			}
			if st := s.ep.Stats(); st.Writes != 0 {
				return fmt.Errorf("rejected writes were posted: %+v", st)
			}
			copy(src, "last sixteen b.")
			if err := s.ep.WriteImm(src, s.own, s.peer, region-16, 77); err != nil {
				return fmt.Errorf("a write that fits exactly: %w", err)
			}
			return s.ep.Flush(s.timeout)
		},
		listener: func(s *side) error {
			got, err := s.imms(1)
			if err != nil {
				return err
			}
			if got[0] != 77 {
				return fmt.Errorf("received immediate %d: a rejected write was sent", got[0])
			}
			if string(s.own.Bytes()[region-16:]) != "last sixteen b.\x00" {
				return fmt.Errorf("last 16 bytes: %q", s.own.Bytes()[region-16:])
			}
			return nil
		},
	}
}

// badKeyCase writes with a key the peer never registered: the failure
// comes back as an error on one side or the other (a completion error with
// libfabric's text at the writer, the connection ending, or, where the
// target drops the write without a word as libfabric 1.17 shm does, a
// write that never completes: Flush's timeout), never as delivered data
// and never as a hang. 64 KiB, so shm does not complete it at posting.
func badKeyCase() testCase {
	// Each side waits until its endpoint fails or the other side says its
	// own did; a side that failed tells the other.
	wait := func(s *side) error {
		deadline := time.Now().Add(s.timeout)
		for spins := 0; ; spins++ {
			if s.pollErr != nil {
				return s.sendStr("failed", s.pollErr.Error())
			}
			select {
			case m, ok := <-s.c.in:
				if !ok {
					return errors.New("side channel closed")
				}
				if m.Case == s.caseName && m.Kind == "failed" {
					return nil
				}
				if m.Case == s.caseName && m.Kind == "done" {
					s.peerDone = &m
					return fmt.Errorf("peer finished early: %s", m.Str)
				}
				continue
			default:
			}
			if !s.pollOnce() {
				if time.Now().After(deadline) {
					return errors.New("a write with a bad key failed on neither side")
				}
				transport.Backoff(spins)
			}
			if len(s.got) > 0 {
				return fmt.Errorf("a write with a bad key delivered immediate %d", s.got[0])
			}
		}
	}
	return testCase{
		name:   "bad-key",
		region: 128 << 10,
		dialer: func(s *side) error {
			bad := s.peer
			bad.Key ^= 0x5a5a0000
			if err := s.ep.WriteImm(s.own.Bytes()[:64<<10], s.own, bad, 0, 99); err != nil {
				return s.sendStr("failed", err.Error()) // refused at once: fine
			}
			if err := s.ep.Flush(3 * time.Second); err != nil {
				return s.sendStr("failed", err.Error())
			}
			return wait(s)
		},
		listener: wait,
	}
}

// peerClosesCase: the dialer closes after one write; the listener's Poll
// then fails with ErrPeerClosed, and its writes fail, without hanging.
func peerClosesCase() testCase {
	return testCase{
		name:   "peer-closes",
		region: 4096,
		dialer: func(s *side) error {
			if err := s.ep.WriteImm(s.own.Bytes()[:8], s.own, s.peer, 0, 1); err != nil {
				return err
			}
			if _, err := s.await(true, "got"); err != nil {
				return err
			}
			if err := s.ep.Close(); err != nil {
				return fmt.Errorf("Close: %w", err)
			}
			if err := s.ep.Close(); !errors.Is(err, transport.ErrClosed) {
				return fmt.Errorf("second Close: %v, want ErrClosed", err)
			}
			if _, err := s.ep.Poll(nil); !errors.Is(err, transport.ErrClosed) {
				return fmt.Errorf("Poll after Close: %v, want ErrClosed", err)
			}
			if err := s.ep.WriteImm(s.own.Bytes()[:8], s.own, s.peer, 0, 2); !errors.Is(err, transport.ErrClosed) {
				return fmt.Errorf("WriteImm after Close: %v, want ErrClosed", err)
			}
			return s.send("closed")
		},
		listener: func(s *side) error {
			if _, err := s.imms(1); err != nil {
				return err
			}
			if err := s.send("got"); err != nil {
				return err
			}
			if _, err := s.await(false, "closed"); err != nil {
				return err
			}
			deadline := time.Now().Add(s.timeout)
			for spins := 0; s.pollErr == nil; spins++ {
				s.pollOnce()
				if time.Now().After(deadline) {
					return errors.New("Poll did not report the peer's close")
				}
				transport.Backoff(spins)
			}
			if !errors.Is(s.pollErr, transport.ErrPeerClosed) {
				return fmt.Errorf("Poll after the peer closed: %v, want ErrPeerClosed", s.pollErr)
			}
			if err := s.ep.WriteImm(s.own.Bytes()[:8], s.own, s.peer, 0, 3); err == nil {
				return errors.New("WriteImm to a closed peer succeeded")
			}
			return nil
		},
	}
}

// closeDuringWritesCase: the listener closes while the dialer keeps
// writing 1 MiB messages; the dialer must get an error, not hang.
func closeDuringWritesCase() testCase {
	const size = 1 << 20
	return testCase{
		name:   "close-during-writes",
		region: 4 * size,
		dialer: func(s *side) error {
			src := s.own.Bytes()[:size]
			deadline := time.Now().Add(s.timeout)
			var err error
			for i := 0; err == nil; i++ {
				if err = s.ep.WriteImm(src, s.own, s.peer, uint64(i%4*size), uint64(i)); err != nil {
					break
				}
				s.pollOnce()
				err = s.pollErr
				if time.Now().After(deadline) {
					return fmt.Errorf("%d writes to a closed peer all succeeded", i)
				}
			}
			if !errors.Is(err, transport.ErrPeerClosed) {
				return fmt.Errorf("writing to a closed peer: %v, want ErrPeerClosed", err)
			}
			return nil
		},
		listener: func(s *side) error {
			if _, err := s.imms(3); err != nil {
				return err
			}
			return s.ep.Close()
		},
	}
}

// duplexCase: both sides write to each other at once.
func duplexCase() testCase {
	const n, size = 500, 1024
	half := func(s *side) error {
		if err := s.send("ready"); err != nil {
			return err
		}
		if _, err := s.await(true, "ready"); err != nil {
			return err
		}
		b := s.own.Bytes()
		next := 0
		for i := 0; i < n; i++ {
			src := b[i*size : (i+1)*size]
			fill(src, uint64(i))
			if err := s.ep.WriteImm(src, s.own, s.peer, uint64(i*size), uint64(i)); err != nil {
				return fmt.Errorf("WriteImm %d: %w", i, err)
			}
			s.pollOnce()
			for ; next < len(s.got); next++ {
				if s.got[next] != uint64(next) {
					return fmt.Errorf("immediate %d is %d", next, s.got[next])
				}
			}
		}
		if _, err := s.imms(n); err != nil {
			return err
		}
		return s.ep.Flush(s.timeout)
	}
	return testCase{name: "duplex", region: n*size + 4096, dialer: half, listener: half}
}

// badAddressCase: dialing and listening at bad addresses fail with an
// error (at once, or after the provider's short timeout), as does dialing
// a listener that closed.
func badAddressCase() testCase {
	return testCase{
		name:            "bad-address",
		noConn:          true,
		providerTimeout: 2 * time.Second,
		dialer: func(s *side) error {
			m, err := s.await(false, "closed-listener")
			if err != nil {
				return err
			}
			for _, a := range append(s.v.badDial, m.Str) {
				ep, err := s.prov.Dial(a)
				if err == nil {
					ep.Close()
					return fmt.Errorf("Dial(%q) succeeded", a)
				}
			}
			for _, a := range s.v.badListen {
				ln, err := s.prov.Listen(a)
				if err == nil {
					ln.Close()
					return fmt.Errorf("Listen(%q) succeeded", a)
				}
			}
			return nil
		},
		listener: func(s *side) error {
			ln, err := s.prov.Listen(s.v.listenAddr(s.node))
			if err != nil {
				return err
			}
			addr := ln.Addr()
			if err := ln.Close(); err != nil {
				return err
			}
			if _, err := ln.Accept(); !errors.Is(err, transport.ErrClosed) {
				return fmt.Errorf("Accept after Close: %v, want ErrClosed", err)
			}
			return s.sendStr("closed-listener", addr)
		},
	}
}

var cases = []testCase{
	writeImmCase(4<<10, false),
	writeImmCase(1<<20, true),
	writeImmCase(4<<20, false),
	writeImmCase(64<<20, true),
	orderCase(),
	writeThenImmCase(),
	eagainCase(),
	boundsCase(),
	badKeyCase(),
	duplexCase(),
	peerClosesCase(),
	closeDuringWritesCase(),
	badAddressCase(),
	sleepWakesCase(),
	sleepWakeCase(),
	sleepPeerClosesCase(),
}

func caseNamed(name string) *testCase {
	for i := range cases {
		if cases[i].name == name {
			return &cases[i]
		}
	}
	return nil
}

// TestConformance runs every case against every transport, both sides in
// this process over 127.0.0.1 (or shm).
func TestConformance(t *testing.T) {
	for i := range variants {
		v := &variants[i]
		t.Run(v.name, func(t *testing.T) {
			p, err := v.open("127.0.0.1", time.Second)
			skipUnsupported(t, err)
			p.Close()
			t.Cleanup(func() {
				if c := fabric.Outstanding(); c != (fabric.Counts{}) {
					t.Errorf("libfabric objects left open: %+v", c)
				}
				if left := shmLeftovers(); v.shm && len(left) > 0 {
					t.Errorf("libfabric shm left files in /dev/shm: %v", left)
				}
			})
			for j := range cases {
				cs := &cases[j]
				t.Run(cs.name, func(t *testing.T) { runPair(t, v, cs) })
			}
		})
	}
}

// runPair runs both halves of cs in this process, the side channel over a
// loopback TCP connection.
func runPair(t *testing.T, v *variant, cs *testCase) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	ca, cb := newCtl(a), newCtl(b)
	defer func() {
		a.Close()
		b.Close()
		for range ca.in {
		}
		for range cb.in {
		}
	}()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, dialer := range []bool{true, false} {
		c := ca
		if !dialer {
			c = cb
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runSide(v, cs, dialer, "127.0.0.1", c)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

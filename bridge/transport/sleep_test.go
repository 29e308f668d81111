package transport_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// Sleep and Wake (an idle endpoint sleeping in the kernel): the cases run
// with every variant; one whose provider has no wait object (noSleep:
// libfabric shm 1.17) must say so with ErrNotSupported, and its side then
// polls instead, so the rest of each case still runs.

// sleepUntil polls, then sleeps until the endpoint may have more, until
// done holds after a poll (or the endpoint failed: done sees s.pollErr).
// It fails when a Sleep ran into its timeout (it slept through what it
// should have woken for) and returns how many Sleeps it made.
func (s *side) sleepUntil(what string, done func() bool) (int, error) {
	deadline := time.Now().Add(s.timeout)
	sleeps := 0
	for spins := 0; ; spins++ {
		s.pollOnce()
		if done() {
			return sleeps, nil
		}
		if s.pollErr != nil {
			return sleeps, fmt.Errorf("%s: %w", what, s.pollErr)
		}
		if time.Now().After(deadline) {
			return sleeps, fmt.Errorf("%s: not within %v", what, s.timeout)
		}
		err := s.ep.Sleep(time.Until(deadline))
		sleeps++
		switch {
		case err == nil:
		case errors.Is(err, transport.ErrTimeout):
			return sleeps, fmt.Errorf("%s: Sleep slept through it (ran into its timeout)", what)
		case errors.Is(err, transport.ErrNotSupported) && s.v.noSleep:
			transport.Backoff(spins) // no wait object: poll
		default:
			return sleeps, fmt.Errorf("%s: Sleep: %w", what, err)
		}
	}
}

// checkSleepSupport fails unless Sleep says ErrNotSupported exactly for the
// variants that have no wait object.
func (s *side) checkSleepSupport(err error) error {
	switch {
	case s.v.noSleep && !errors.Is(err, transport.ErrNotSupported):
		return fmt.Errorf("Sleep on a provider without a wait object: %v, want ErrNotSupported", err)
	case !s.v.noSleep && errors.Is(err, transport.ErrNotSupported):
		return fmt.Errorf("Sleep: %w", err)
	}
	return nil
}

// sleepWakesCase: the listener sleeps through a quiet spell (its Sleeps
// end by their timeout, not in a busy loop), then sleeps while the dialer
// writes, round after round: a write with an immediate, a Write without
// one (the head write-back's kind: no completion announces it, the bytes
// wake the sleeper), and a burst of writes of mixed sizes. Each round's
// bytes and immediates arrive intact and in order, and no Sleep sleeps
// through them.
func sleepWakesCase() testCase {
	const burst = 150
	sizes := []int{64, 4096, 64 << 10}
	const wordOff = 0
	const dataOff = 4096
	region := dataOff + burst*(64<<10)
	off := func(i int) int { return dataOff + i*(64<<10) }
	size := func(i int) int { return sizes[i%len(sizes)] }
	return testCase{
		name:   "sleep-wakes",
		region: region,
		dialer: func(s *side) error {
			b := s.own.Bytes()
			for round := 0; round < 3; round++ {
				if _, err := s.await(true, "sleeping"); err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond) // most likely asleep by now (not needed for correctness)
				switch round {
				case 0:
					src := b[off(0) : off(0)+4096]
					fill(src, 1)
					if err := s.ep.WriteImm(src, s.own, s.peer, uint64(off(0)), 1); err != nil {
						return err
					}
				case 1:
					binary.LittleEndian.PutUint64(b[wordOff:], 0xfeedface)
					if err := s.ep.Write(b[wordOff:wordOff+8], s.own, s.peer, wordOff); err != nil {
						return err
					}
				case 2:
					for i := 0; i < burst; i++ {
						src := b[off(i) : off(i)+size(i)]
						fill(src, uint64(100+i))
						if err := s.ep.WriteImm(src, s.own, s.peer, uint64(off(i)), uint64(100+i)); err != nil {
							return fmt.Errorf("burst write %d: %w", i, err)
						}
					}
				}
				if err := s.ep.Flush(s.timeout); err != nil {
					return err
				}
			}
			return nil
		},
		listener: func(s *side) error {
			b := s.own.Bytes()
			// A quiet spell: the Sleeps end by their timeout.
			for i := 0; i < 3; i++ {
				quiet := time.Now().Add(300 * time.Millisecond)
				n := 0
				for ; time.Now().Before(quiet); n++ {
					err := s.ep.Sleep(time.Until(quiet))
					if err := s.checkSleepSupport(err); err != nil {
						return err
					}
					if s.v.noSleep {
						break
					}
					if err != nil && !errors.Is(err, transport.ErrTimeout) {
						return fmt.Errorf("Sleep in a quiet spell: %w", err)
					}
					if n > 100 {
						return fmt.Errorf("Sleep returned %d times within a quiet spell of 300 ms: it spins", n)
					}
				}
				s.pollOnce()
			}
			if len(s.got) != 0 || s.pollErr != nil {
				return fmt.Errorf("a quiet spell brought immediates %v, error %v", s.got, s.pollErr)
			}
			for round := 0; round < 3; round++ {
				if err := s.send("sleeping"); err != nil {
					return err
				}
				var err error
				switch round {
				case 0:
					if _, err = s.sleepUntil("a write with an immediate", func() bool { return len(s.got) >= 1 }); err != nil {
						return err
					}
					want := make([]byte, 4096)
					fill(want, 1)
					if s.got[0] != 1 || crc32.Checksum(b[off(0):off(0)+4096], crcTable) != crc32.Checksum(want, crcTable) {
						return fmt.Errorf("round 0: immediate %v, or its bytes differ", s.got)
					}
					s.got = s.got[1:]
				case 1:
					if _, err = s.sleepUntil("a Write without immediate", func() bool { return binary.LittleEndian.Uint64(b[wordOff:]) == 0xfeedface }); err != nil {
						return err
					}
				case 2:
					if _, err = s.sleepUntil("a burst", func() bool { return len(s.got) >= burst }); err != nil {
						return err
					}
					for i := 0; i < burst; i++ {
						if s.got[i] != uint64(100+i) {
							return fmt.Errorf("burst: immediate %d is %d", i, s.got[i])
						}
						want := make([]byte, size(i))
						fill(want, uint64(100+i))
						if crc32.Checksum(b[off(i):off(i)+size(i)], crcTable) != crc32.Checksum(want, crcTable) {
							return fmt.Errorf("burst: the bytes of write %d differ", i)
						}
					}
				}
			}
			return nil
		},
	}
}

// sleepWakeCase: Wake ends a Sleep under way, a Wake before a Sleep ends
// the Sleep at once, Close ends a Sleep under way, and a Sleep after Close
// returns ErrClosed.
func sleepWakeCase() testCase {
	return testCase{
		name:   "sleep-wake",
		region: 4096,
		dialer: func(s *side) error { return nil },
		listener: func(s *side) error {
			returned := func(what string, ch <-chan error) error {
				select {
				case err := <-ch:
					return err
				case <-time.After(s.timeout):
					return fmt.Errorf("%s did not end the Sleep", what)
				}
			}
			// Wake first: the next Sleep returns at once (not by its timeout).
			s.ep.Wake()
			err := s.ep.Sleep(s.timeout)
			if err := s.checkSleepSupport(err); err != nil || s.v.noSleep {
				return err
			}
			if err != nil {
				return fmt.Errorf("Sleep after a Wake: %w", err)
			}
			for i := 0; i < 3; i++ {
				ch := make(chan error, 1)
				go func() { ch <- s.ep.Sleep(-1) }()
				time.Sleep(20 * time.Millisecond)
				s.ep.Wake()
				if err := returned("Wake", ch); err != nil {
					return fmt.Errorf("Sleep ended by Wake: %w", err)
				}
			}
			ch := make(chan error, 1)
			go func() { ch <- s.ep.Sleep(-1) }()
			time.Sleep(20 * time.Millisecond)
			if err := s.ep.Close(); err != nil {
				return fmt.Errorf("Close: %w", err)
			}
			// The close's own traffic (libfabric's bye and its ack) may end
			// the Sleep first: nil or ErrClosed.
			if err := returned("Close", ch); err != nil && !errors.Is(err, transport.ErrClosed) {
				return fmt.Errorf("Sleep ended by Close: %v, want ErrClosed", err)
			}
			if err := s.ep.Sleep(s.timeout); !errors.Is(err, transport.ErrClosed) {
				return fmt.Errorf("Sleep after Close: %v, want ErrClosed", err)
			}
			s.ep.Wake() // after Close: nothing
			return nil
		},
	}
}

// sleepPeerClosesCase: the listener sleeps when the dialer closes; the
// close wakes it and its Poll reports ErrPeerClosed, without a busy loop
// of Sleeps on the dead connection.
func sleepPeerClosesCase() testCase {
	return testCase{
		name:   "sleep-peer-closes",
		region: 4096,
		dialer: func(s *side) error {
			if _, err := s.await(true, "sleeping"); err != nil {
				return err
			}
			time.Sleep(20 * time.Millisecond)
			return s.ep.Close()
		},
		listener: func(s *side) error {
			if err := s.send("sleeping"); err != nil {
				return err
			}
			n, err := s.sleepUntil("the peer's close", func() bool { return s.pollErr != nil })
			if err != nil {
				return err
			}
			if !errors.Is(s.pollErr, transport.ErrPeerClosed) {
				return fmt.Errorf("Poll after the peer closed: %v, want ErrPeerClosed", s.pollErr)
			}
			if !s.v.noSleep && n > 100 {
				return fmt.Errorf("%d Sleeps before the close was seen: they spin", n)
			}
			return nil
		},
	}
}

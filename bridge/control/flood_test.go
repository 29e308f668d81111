package control

import (
	"net"
	"sync"
	"testing"
	"time"
)

// flood holds unauthenticated connections open against addr from the given
// loopback source addresses, workers per address: each connects, sends
// nothing (or, trickle, one byte of a frame header now and then), waits
// until the listener closes it, and connects again, until stop.
type flood struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns int
}

func startFlood(t testing.TB, addr string, sources []string, workers int, trickle bool) *flood {
	f := &flood{stop: make(chan struct{})}
	for _, src := range sources {
		for w := 0; w < workers; w++ {
			slow := trickle && w%2 == 1
			f.wg.Go(func() { f.worker(addr, src, slow) })
		}
	}
	t.Cleanup(f.halt)
	return f
}

func (f *flood) halt() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	f.wg.Wait()
}

func (f *flood) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

func (f *flood) worker(addr, src string, trickle bool) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
	buf := make([]byte, 256)
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		nc, err := d.Dial("tcp", addr)
		if err == nil {
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
			closed := make(chan struct{})
			go func() {
				select {
				case <-f.stop:
				case <-closed:
				}
				nc.Close()
			}()
			for i := 0; ; i++ {
				if trickle {
					nc.Write([]byte{"RGCP"[i%4]})
					nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
				}
				if _, err := nc.Read(buf); err != nil {
					if ne, ok := err.(net.Error); ok && ne.Timeout() {
						continue
					}
					break
				}
			}
			close(closed)
		}
		select {
		case <-f.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A flood of unauthenticated connections, silent or trickling bytes, from
// several addresses, does not keep a real peer out: its session comes up,
// and comes up again after it restarts, while the flood goes on. The
// listener never holds more than its limits, and the failed handshakes
// leave a few log lines with a count, not one line each.
func TestListenerSlowlorisFlood(t *testing.T) {
	rec := &logRecorder{}
	cfg := hsConfig("server", false)
	cfg.Timeout = 0 // DefaultPreAuthTimeout
	opts := ListenOptions{MaxPending: 40, MaxPendingPerAddr: 16, LogBurst: 5, LogEvery: time.Hour}
	ln, err := ListenWith("127.0.0.1:0", cfg, opts, slogFor(rec))
	if err != nil {
		t.Fatal(err)
	}
	var srvSessions []*Session
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, peer, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := NewSession(SessionConfig{Established: c, EstablishedPeer: peer, Heartbeat: 50 * time.Millisecond, DeadAfter: 2 * time.Second})
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			srvSessions = append(srvSessions, s)
			mu.Unlock()
		}
	})
	defer func() {
		ln.Close()
		wg.Wait()
		for _, s := range srvSessions {
			s.Close()
		}
	}()
	fl := startFlood(t, ln.Addr().String(), []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}, 24, true)
	eventually(t, "the flood to fill the listener", func() bool {
		p, dropped := ln.Pending()
		return p >= opts.MaxPending-4 && dropped > 0
	})
	for round := 0; round < 2; round++ { // the peer starts, then restarts
		var ev events
		cfg := dialConfig(ln.Addr(), &ev)
		cfg.Handshake.Timeout = DefaultHandshakeTimeout
		s, err := NewSession(cfg)
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "the real peer's session up during the flood", func() bool {
			u, _ := ev.counts()
			p, _ := ln.Pending()
			if p > opts.MaxPending {
				t.Fatalf("%d pending handshakes, limit %d", p, opts.MaxPending)
			}
			return u == 1
		})
		if err := s.Send(16, blob{Data: "through"}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if fl.count() <= opts.MaxPending {
		t.Fatalf("the flood made only %d connections", fl.count())
	}
	fl.halt()
	ln.Close()
	failed := rec.count("control handshake")
	if failed > opts.LogBurst+1 { // the burst, and the count at Close
		t.Errorf("%d log lines for failed or dropped handshakes, want at most %d (rate limit)", failed, opts.LogBurst+1)
	}
	if rec.count("suppressed=") == 0 {
		t.Error("no log line counts the suppressed ones")
	}
	t.Logf("flood: %d connections, %d log lines", fl.count(), len(rec.recs))
}

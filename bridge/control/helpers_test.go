package control

import (
	"context"
	"flag"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// TestMain fails the run on leaked goroutines and descriptors: every
// Session, Listener and Conn a test opens must be closed. Under -fuzz the
// fuzzing engine leaves its own signal goroutine behind, so the check is
// left to the ordinary runs, which run the seed corpus too.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.fuzz"); f != nil && f.Value.String() != "" {
		os.Exit(m.Run())
	}
	testutil.Main(m)
}

// hangGuard is how long a test waits for something that must happen before
// it calls the code under test hung. It is a failsafe, not a measurement.
const hangGuard = 20 * time.Second

var testSecret = []byte("0123456789abcdef-test-secret")

func hsConfig(host string, dialer bool) HandshakeConfig {
	return HandshakeConfig{Secret: testSecret, HostID: host, Name: host + "-name", Domain: 7, Dialer: dialer, Timeout: 5 * time.Second, Features: []string{"f1"}}
}

// tcpPair returns the two ends of a real TCP connection on 127.0.0.1,
// closed at the end of the test.
func tcpPair(t testing.TB) (dialed, accepted net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		d.Close()
		t.Fatal(r.err)
	}
	t.Cleanup(func() { d.Close(); r.c.Close() })
	return d, r.c
}

// connPair wraps tcpPair in Conns.
func connPair(t testing.TB) (dialed, accepted *Conn) {
	d, a := tcpPair(t)
	return NewConn(d), NewConn(a)
}

type hsResult struct {
	peer Hello
	err  error
}

// handshakePair runs both sides' handshakes concurrently.
func handshakePair(t *testing.T, dcfg, acfg HandshakeConfig) (d, a hsResult, dc, ac *Conn) {
	t.Helper()
	dc, ac = connPair(t)
	var wg sync.WaitGroup
	wg.Go(func() { d.peer, d.err = Handshake(dc, dcfg) })
	wg.Go(func() { a.peer, a.err = Handshake(ac, acfg) })
	waitGroup(t, &wg, "both handshakes")
	return d, a, dc, ac
}

func waitGroup(t testing.TB, wg *sync.WaitGroup, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("hung waiting for %s", what)
	}
}

// eventually polls cond with a deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, hangGuard, what, cond)
}

// logRecorder is a slog handler that keeps records for assertions.
type logRecorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	r.mu.Lock()
	r.recs = append(r.recs, b.String())
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

// count returns how many records contain every one of parts.
func (r *logRecorder) count(parts ...string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
next:
	for _, s := range r.recs {
		for _, p := range parts {
			if !strings.Contains(s, p) {
				continue next
			}
		}
		n++
	}
	return n
}

func slogFor(r *logRecorder) *slog.Logger { return slog.New(r) }

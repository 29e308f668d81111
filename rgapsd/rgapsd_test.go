package rgapsd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

func TestMain(m *testing.M) { testutil.Main(m) }

// syncBuffer is a log the daemon's goroutine writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A GPU-pool daemon serves until its context ends; a second one for the
// same domain says that one runs and returns nil at once, as
// `rgaps daemon` does.
func TestMainServesUntilCancelled(t *testing.T) {
	const domain = 83
	cfg := zerocopy.Config{Prefix: testutil.Prefix(), Domain: domain}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log syncBuffer
	done := make(chan error, 1)
	go func() { done <- Main(ctx, nil, cfg, &log) }()
	testutil.Eventually(t, 20*time.Second, "daemon answers", func() bool {
		c, err := gpupool.Dial(cfg.Prefix, domain, false)
		if err != nil {
			return false
		}
		defer c.Close()
		_, err = c.Ping()
		return err == nil
	})

	var second bytes.Buffer
	if err := Main(context.Background(), nil, cfg, &second); err != nil {
		t.Fatalf("second daemon: %v", err)
	}
	if !strings.Contains(second.String(), "a daemon for domain 83 runs already") {
		t.Errorf("second daemon said %q", second.String())
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("daemon still running 20 s after its context ended")
	}
	if !strings.Contains(log.String(), "rgaps daemon stopped") {
		t.Errorf("log lacks the stop line:\n%s", log.String())
	}
}

// Flags are checked before anything starts: -h is flag.ErrHelp (exit 2 in
// the command), stray arguments and a bad domain are errors.
func TestMainArguments(t *testing.T) {
	cfg := zerocopy.Config{Prefix: testutil.Prefix()}
	var out bytes.Buffer
	if err := Main(context.Background(), []string{"-h"}, cfg, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-allow-group") {
		t.Errorf("-h: %v, usage %q", err, out.String())
	}
	if err := Main(context.Background(), []string{"extra"}, cfg, &out); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("stray argument: %v", err)
	}
	if err := Main(context.Background(), []string{"-domain", "300"}, cfg, &out); err == nil || !strings.Contains(err.Error(), "bad domain") {
		t.Errorf("-domain 300: %v", err)
	}
}

package control

import (
	"log/slog"
	"testing"
	"time"
)

// The limiter writes its burst, counts the rest, hands the count to the
// next record it writes, and Flush writes what is left.
func TestLogLimiter(t *testing.T) {
	rec := &logRecorder{}
	l := NewLogLimiter(slogFor(rec), 3, time.Hour)
	for i := 0; i < 100; i++ {
		l.Log(slog.LevelWarn, "refused", "i", i)
	}
	if n := rec.count("refused"); n != 3 {
		t.Fatalf("%d records written, want the burst of 3", n)
	}
	if l.Suppressed() != 97 {
		t.Fatalf("suppressed %d, want 97", l.Suppressed())
	}
	l.Flush("refusals")
	if rec.count("refusals", "suppressed=97") != 1 || l.Suppressed() != 0 {
		t.Fatalf("flush: %v", rec.recs)
	}
	// A limiter that refills at once writes everything, with the count of
	// what it suppressed before.
	fast := NewLogLimiter(slogFor(rec), 1, time.Nanosecond)
	fast.mu.Lock()
	fast.tokens, fast.suppressed, fast.last = 0, 5, time.Now()
	fast.mu.Unlock()
	time.Sleep(time.Millisecond) // let the bucket refill
	if !fast.Log(slog.LevelInfo, "again") || rec.count("again", "suppressed=5") != 1 {
		t.Fatalf("after refill: %v", rec.recs)
	}
	NewLogLimiter(nil, 1, time.Second).Log(slog.LevelInfo, "silent") // nil logger: no panic
}

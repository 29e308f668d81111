package control

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// LogLimiter passes log records to a logger at a bounded rate: a token
// bucket of Burst records refilled with one record per Every. Records over
// the rate are counted, not written; the next record written carries the
// count as "suppressed", and Flush writes a record for a count left over.
// A peer that provokes a log line per packet (failed handshakes, refused
// messages) then costs a few lines per second, not megabytes. Safe for
// concurrent use.
type LogLimiter struct {
	log   *slog.Logger
	burst float64
	every time.Duration

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed uint64
}

// NewLogLimiter wraps log (nil: silent): burst records at once, then one
// per every.
func NewLogLimiter(log *slog.Logger, burst int, every time.Duration) *LogLimiter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &LogLimiter{log: log, burst: float64(burst), every: every, tokens: float64(burst)}
}

// Log writes the record if the rate allows, and counts it otherwise.
// It reports whether the record was written.
func (l *LogLimiter) Log(level slog.Level, msg string, args ...any) bool {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && l.every > 0 {
		l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.last))/float64(l.every))
	}
	l.last = now
	if l.tokens < 1 {
		l.suppressed++
		l.mu.Unlock()
		return false
	}
	l.tokens--
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	l.log.Log(context.Background(), level, msg, args...)
	return true
}

// Suppressed returns how many records were counted and not written since
// the last one written.
func (l *LogLimiter) Suppressed() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.suppressed
}

// Flush writes one record with the count of records suppressed since the
// last one written, if any.
func (l *LogLimiter) Flush(msg string) {
	l.mu.Lock()
	n := l.suppressed
	l.suppressed = 0
	l.mu.Unlock()
	if n > 0 {
		l.log.Warn(msg, "suppressed", n)
	}
}

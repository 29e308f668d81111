package main

import (
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/pattern"
)

func TestDemoSizes(t *testing.T) {
	for _, maxSize := range []int64{demoMinSize, 1000, 64 << 10, 4 << 20} {
		seenMax := false
		for i := range uint64(200) {
			n := demoSize(i, maxSize)
			if n < demoMinSize || int64(n) > maxSize {
				t.Fatalf("max %d: message %d has %d bytes", maxSize, i, n)
			}
			if n != demoSize(i, maxSize) {
				t.Fatalf("max %d: message %d: size not deterministic", maxSize, i)
			}
			seenMax = seenMax || int64(n) == maxSize
		}
		if !seenMax {
			t.Errorf("max %d: no message of the largest size", maxSize)
		}
	}
}

func demoMessage(i uint64, maxSize int64) []byte {
	b := make([]byte, demoSize(i, maxSize))
	binary.LittleEndian.PutUint64(b, i)
	pattern.Fill(b[demoHeader:], i)
	return b
}

func TestDemoVerify(t *testing.T) {
	const maxSize = 1 << 20
	for i := range uint64(20) {
		b := demoMessage(i, maxSize)
		if idx, problem := verifyDemo(b, maxSize); idx != i || problem != "" {
			t.Fatalf("message %d: index %d, %q", i, idx, problem)
		}
	}
	b := demoMessage(9, maxSize)
	b[len(b)/2] ^= 1
	if _, problem := verifyDemo(b, maxSize); !strings.Contains(problem, "is wrong") {
		t.Errorf("flipped byte: %q", problem)
	}
	b[len(b)/2] ^= 1
	if _, problem := verifyDemo(b[:len(b)-1], maxSize); !strings.Contains(problem, "bytes, expected") {
		t.Errorf("short message: %q", problem)
	}
	// Another message's bytes under this index: the pattern differs.
	c := demoMessage(19, maxSize)
	binary.LittleEndian.PutUint64(c, 9)
	if _, problem := verifyDemo(c, maxSize); problem == "" {
		t.Error("message 19's bytes pass as message 9")
	}
	if _, problem := verifyDemo([]byte{1, 2}, maxSize); problem == "" {
		t.Error("2-byte message passes")
	}
}

func TestDemoPercentile(t *testing.T) {
	if percentile(nil, 0.5) != 0 {
		t.Error("percentile of nothing")
	}
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for p, want := range map[float64]time.Duration{0.5: 50, 0.99: 99, 1: 100, 0.001: 1} {
		if got := percentile(d, p); got != want {
			t.Errorf("p%v = %v, want %v", p*100, got, want)
		}
	}
	if got := percentile(d[:1], 0.99); got != 1 {
		t.Errorf("p99 of one = %v", got)
	}
}

func TestDemoParse(t *testing.T) {
	o, err := parseDemo(nil, io.Discard)
	if err != nil || o.n != 200 || o.size != 4<<20 || o.subs != 2 || o.domain.set {
		t.Errorf("defaults: %+v, %v", o, err)
	}
	o, err = parseDemo([]string{"-n", "50", "-size", "64K", "-subs", "3", "-domain", "61", "-rate", "0"}, io.Discard)
	if err != nil || o.n != 50 || o.size != 64<<10 || o.subs != 3 || o.domain.id != 61 || o.rate != 0 {
		t.Errorf("flags: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"-n", "0"}, {"-subs", "0"}, {"-subs", "99"}, {"-size", "10"}, {"-size", "2G"},
		{"-rate", "-1"}, {"extra"}, {"-h"}, {"-bogus"},
	} {
		if _, err := parseDemo(args, io.Discard); !isUsage(err) {
			t.Errorf("demo %q: %v, want a usage error", args, err)
		}
	}
}

func TestDemoPaths(t *testing.T) {
	if got := describePaths(map[string]int{"host-shm": 3}); got != "host-shm (all 3 endpoints)" {
		t.Errorf("one path: %q", got)
	}
	if got := describePaths(map[string]int{"host-shm": 1, "gpu-pool": 2}); got != "gpu-pool (2 endpoints), host-shm (1 endpoint)" {
		t.Errorf("two paths: %q", got)
	}
	if got := describePaths(nil); !strings.HasPrefix(got, "unknown") {
		t.Errorf("no path: %q", got)
	}
}

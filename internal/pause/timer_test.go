package pause

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestPrecise(t *testing.T) {
	if !Precise() {
		t.Fatal("no timerfd on Linux: timers are Go timers only")
	}
}

// A timer never fires before its deadline, from either source.
func TestNeverEarly(t *testing.T) {
	tm := New()
	defer tm.Stop()
	for _, d := range []time.Duration{0, time.Microsecond, 20 * time.Microsecond, 300 * time.Microsecond, 2 * time.Millisecond} {
		for range 20 {
			t0 := time.Now()
			tm.Reset(d)
			<-tm.C()
			if got := time.Since(t0); got < d {
				t.Fatalf("Reset(%v) fired after %v", d, got)
			}
		}
	}
	t0 := time.Now()
	Sleep(200 * time.Microsecond)
	if got := time.Since(t0); got < 200*time.Microsecond {
		t.Fatalf("Sleep(200µs) returned after %v", got)
	}
}

// After Stop, nothing arrives, also from a deadline that had passed.
func TestStopLeavesNoTick(t *testing.T) {
	tm := New()
	tm.Reset(time.Millisecond)
	tm.Stop()
	tm.Reset(0) // due at once
	time.Sleep(time.Millisecond)
	tm.Stop()
	time.Sleep(3 * time.Millisecond) // both sources' deadlines long past
	select {
	case <-tm.C():
		t.Fatal("a tick after Stop")
	default:
	}
}

// Reset replaces the deadline: a later one holds back the earlier, an
// earlier one is not held back by the later.
func TestResetReplaces(t *testing.T) {
	tm := New()
	defer tm.Stop()
	tm.Reset(time.Millisecond)
	tm.Reset(time.Hour)
	select {
	case <-tm.C():
		t.Fatal("the replaced 1 ms deadline fired")
	case <-time.After(20 * time.Millisecond):
	}
	tm.Reset(50 * time.Microsecond)
	select {
	case <-tm.C():
	case <-time.After(10 * time.Second):
		t.Fatal("the 50 µs deadline that replaced an hour did not fire")
	}
}

// Many goroutines with their own timers and deadlines: every timer fires
// once, none early, and the service's heap is empty at the end.
func TestManyTimers(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 64 {
		wg.Go(func() {
			tm := New()
			defer tm.Stop()
			for i := range 50 {
				d := time.Duration((g*7+i*13)%400) * time.Microsecond
				t0 := time.Now()
				tm.Reset(d)
				<-tm.C()
				if got := time.Since(t0); got < d {
					errs <- fmt.Errorf("goroutine %d: %v fired after %v", g, d, got)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	svc.mu.Lock()
	n := len(svc.h)
	svc.mu.Unlock()
	if n != 0 {
		t.Errorf("%d timers left in the service's heap", n)
	}
}

// BenchmarkSleep compares how late a short sleep ends in an otherwise idle
// process: time.Sleep (the baseline, same run) against Sleep. It reports
// the medians and their ratio; b.N is not used for timing.
func BenchmarkSleep(b *testing.B) {
	for _, d := range []time.Duration{10 * time.Microsecond, 100 * time.Microsecond} {
		b.Run(d.String(), func(b *testing.B) {
			const n = 200
			med := func(sleep func(time.Duration)) time.Duration {
				s := make([]time.Duration, n)
				for i := range s {
					t0 := time.Now()
					sleep(d)
					s[i] = time.Since(t0)
				}
				slices.Sort(s)
				return s[n/2]
			}
			for b.Loop() {
				base, fine := med(time.Sleep), med(Sleep)
				b.ReportMetric(float64(base.Microseconds()), "time.Sleep-µs")
				b.ReportMetric(float64(fine.Microseconds()), "pause-µs")
				b.ReportMetric(float64(base)/float64(fine), "ratio")
			}
		})
	}
}

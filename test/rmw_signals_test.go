package test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRmwSignalHandlers runs rmw_signals (rmw/test/rmw_signals.c): a busy
// node whose host installs SIGINT/SIGTERM handlers as rclcpp does (no
// SA_ONSTACK, a few KiB of stack, logging), after rmw_init or before it,
// and wakes its executor from the handler (rclpy) or from a handler thread
// (rclcpp). The test sends it hundreds of signals, to the process and to
// each of its threads, Go's included, and expects: no crash, every message
// intact, every Go thread with the asynchronous signals blocked, and a
// rmw_wait with no timeout woken through the handler. Issue 15: before the
// library kept Go code off the handlers' way, such a process crashed.
func TestRmwSignalHandlers(t *testing.T) {
	k := rmwBuild(t)
	for _, v := range [][2]string{{"after", "thread"}, {"before", "handler"}} {
		t.Run(v[0]+"_"+v[1], func(t *testing.T) { rmwSignals(t, k, v[0], v[1]) })
	}
}

// rmwSignalsCount is how many signals each variant gets.
const rmwSignalsCount = 400

func rmwSignals(t *testing.T, k *rmwKit, when, how string) {
	p, stdin := rmwStart(t, rmwEnv(k, 67), k.progs["rmw_signals"], when, how)
	defer stdin.Close()
	ready := rmwLine(t, p, "READY")
	own := map[int]bool{}
	for _, f := range strings.Fields(ready)[1:] {
		tid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad READY line %q", ready)
		}
		own[tid] = true
	}
	pid := p.cmd.Process.Pid
	rmwGoThreadsBlockSignals(t, pid, own)

	sigs := []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}
	var tasks []int
	sent := 0
	for i := 0; i < rmwSignalsCount; i++ {
		select {
		case <-p.done:
			t.Fatalf("rmw_signals exited (%v) after %d signals\n%s", p.cmd.ProcessState, sent, p)
		default:
		}
		if i%16 == 0 {
			if tasks = rmwTasks(pid); len(tasks) == 0 { // Go starts threads as it needs them
				<-p.done
				continue
			}
		}
		sig := sigs[i%2]
		var err error
		if i%3 == 0 {
			err = syscall.Kill(pid, sig) // process-directed: the kernel picks a thread that does not block it
		} else {
			err = syscall.Tgkill(pid, tasks[i%len(tasks)], sig) // to one thread, whatever its mask
		}
		if err == nil {
			sent++
		}
		// Pacing only, so that signals land while the threads are busy
		// rather than merge while pending.
		time.Sleep(500 * time.Microsecond)
	}
	rmwGoThreadsBlockSignals(t, pid, own)
	t.Logf("%d signals sent to %d threads", sent, len(tasks))

	if _, err := stdin.Write([]byte("stop\n")); err != nil {
		t.Fatalf("rmw_signals: %v\n%s", err, p)
	}
	rmwLine(t, p, "ARMED")
	if err := syscall.Kill(pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	woken := rmwLine(t, p, "WOKEN")
	var handled, taken, bad, triggers int
	if _, err := fmt.Sscanf(woken, "WOKEN handled=%d taken=%d bad=%d triggers=%d", &handled, &taken, &bad, &triggers); err != nil {
		t.Fatalf("bad WOKEN line %q: %v", woken, err)
	}
	t.Logf("%s", woken)
	if code := p.wait(t); code != 0 || !strings.Contains(p.stdout(), "ALL PASS") {
		t.Fatalf("rmw_signals: exit %d\n%s", code, p)
	}
	if bad != 0 || taken == 0 || triggers == 0 || handled == 0 {
		t.Fatalf("handled %d signals, took %d messages (%d damaged), %d triggers", handled, taken, bad, triggers)
	}
}

// rmwLine waits for a stdout line starting with prefix and returns it.
func rmwLine(t *testing.T, p *capiProc, prefix string) string {
	t.Helper()
	timer := time.NewTimer(capiTimeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.done
				t.Fatalf("%s exited (%v) before printing %q\n%s", p.name, p.cmd.ProcessState, prefix, p)
			}
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-timer.C:
			t.Fatalf("%s printed no %q within %v\n%s", p.name, prefix, capiTimeout, p)
		}
	}
}

// rmwTasks lists the threads of process pid (none once it has exited).
func rmwTasks(pid int) []int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var tids []int
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// rmwGoThreadsBlockSignals checks the signal masks of process pid: every
// thread but the program's own (own; all of them created by the Go
// runtime) blocks the asynchronous signals a host may handle, and the
// program's main thread, idle in C, blocks none of them (it loaded the
// library: what the library's start-up blocked, it gave back).
func rmwGoThreadsBlockSignals(t *testing.T, pid int, own map[int]bool) {
	t.Helper()
	// Not SIGCHLD, SIGPROF or SIGURG: Go unblocks those in every thread
	// it starts (docs/ARCHITECTURE.md, "Signals").
	async := []syscall.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGUSR1,
		syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM, syscall.SIGTERM, syscall.SIGWINCH}
	goThreads := 0
	for _, tid := range rmwTasks(pid) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/status", pid, tid))
		if err != nil {
			continue // the thread ended
		}
		var blk uint64
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "SigBlk:"); ok {
				blk, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				if err != nil {
					t.Fatalf("thread %d: bad SigBlk %q", tid, v)
				}
			}
		}
		blocked := func(s syscall.Signal) bool { return blk&(1<<(uint(s)-1)) != 0 }
		switch {
		case tid == pid:
			for _, s := range async {
				if blocked(s) {
					t.Errorf("main thread %d blocks %v (SigBlk %016x): loading the library changed its mask", tid, s, blk)
					break
				}
			}
		case !own[tid]:
			goThreads++
			for _, s := range async {
				if !blocked(s) {
					t.Errorf("Go thread %d does not block %v (SigBlk %016x)", tid, s, blk)
					break
				}
			}
		}
	}
	if goThreads == 0 {
		t.Errorf("no Go thread found in process %d", pid)
	}
}

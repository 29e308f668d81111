// Package testutil holds what the project's tests share: the leak check
// every TestMain runs, child-process helpers, and skip rules for missing
// hardware. It is imported only by tests.
package testutil

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/pause"
)

// Prefix is the shared-memory prefix of this test process and its children:
// every test run gets its own, so runs never see each other's topics, and
// the leak check knows exactly which segments are the run's own.
func Prefix() string {
	if p := os.Getenv("RGAPS_SHM_PREFIX"); strings.HasPrefix(p, "rgt") {
		return p
	}
	return fmt.Sprintf("rgt%d", os.Getpid())
}

// Daemon, when set (by a test package's init), lets the test binary serve
// as `rgaps daemon`: tests point RGAPS_DAEMON at os.Args[0], so the engine's
// auto-start runs the daemon code under test, with the race detector.
// Packages above the bridge set it to rgapsd.Main, the daemon's main in
// production; the engine's own packages, which must not import the bridge,
// to gpupool.Run, the part of it they own. Main cancels ctx on SIGINT or
// SIGTERM, as the command does.
var Daemon func(ctx context.Context, args []string) error

// Main runs the tests of a package and fails the run when they leaked
// goroutines, file descriptors or shared-memory segments. Child processes
// (re-executions of the test binary) skip the check: their parent checks.
func Main(m *testing.M) {
	os.Setenv("RGAPS_SHM_PREFIX", Prefix())
	if len(os.Args) > 1 && os.Args[1] == "daemon" && Daemon != nil {
		// The engine started this test binary as its daemon (RGAPS_DAEMON).
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		err := Daemon(ctx, os.Args[2:])
		stop()
		if err != nil {
			fmt.Fprintln(os.Stderr, "daemon:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(ChildEnv) != "" {
		os.Exit(runChild())
	}
	pause.Precise() // its timerfd and goroutine live as long as the process: not a leak
	baseline = listFDs()
	gor := runtime.NumGoroutine()
	code := m.Run()
	if code == 0 {
		if err := checkLeaks(baseline, gor); err != nil {
			fmt.Fprintln(os.Stderr, "leak check:", err)
			code = 1
		}
	}
	removeSegments()
	os.Exit(code)
}

var baseline map[string]string

// AllowCurrentFDs adds the descriptors open now to those the leak check
// accepts. Tests call it right after the CUDA driver initialised: the
// driver keeps its device files, pipes and sockets for the process's life.
func AllowCurrentFDs() {
	for fd, target := range listFDs() {
		baseline[fd] = target
	}
}

// listFDs maps each open descriptor to what it refers to.
func listFDs() map[string]string {
	ents, _ := os.ReadDir("/proc/self/fd")
	out := map[string]string{}
	for _, e := range ents {
		l, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err == nil { // the directory's own descriptor is gone by now
			out[e.Name()] = l
		}
	}
	return out
}

// runtimeFD tells descriptors the Go runtime opens lazily (the network
// poller, cgroup CPU limits) from the project's own.
func runtimeFD(target string) bool {
	return strings.HasPrefix(target, "anon_inode:[event") || strings.HasPrefix(target, "/sys/fs/cgroup/") || target == "/dev/null"
}

func segments() []string {
	ents, _ := os.ReadDir("/dev/shm")
	var out []string
	p := Prefix()
	for _, e := range ents {
		// The run's prefix, or one derived from it (a test's emulated
		// hosts: rgt<pid>a1_…), but not another pid's (rgt<pid>7_…).
		rest, ok := strings.CutPrefix(e.Name(), p)
		if ok && rest != "" && (rest[0] < '0' || rest[0] > '9') {
			out = append(out, e.Name())
		}
	}
	return out
}

// graph segments are per domain and deliberately persistent (nodes of other
// processes may come at any time); they hold no payload. So is a DDS
// gateway's delivery ledger (what a restarted gateway must not deliver
// again).
func removeSegments() {
	for _, s := range segments() {
		os.Remove("/dev/shm/" + s)
	}
}

func checkLeaks(fds map[string]string, gor int) error {
	deadline := time.Now().Add(leakGrace)
	for {
		var problems []string
		if n := runtime.NumGoroutine(); n > gor {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			problems = append(problems, fmt.Sprintf("%d goroutines left, %d at start:\n%s", n, gor, buf))
		}
		var leaked []string
		for fd, target := range listFDs() {
			if fds[fd] != target && !runtimeFD(target) {
				leaked = append(leaked, fd+" -> "+target)
			}
		}
		if len(leaked) > 0 {
			problems = append(problems, fmt.Sprintf("file descriptors left open: %v%s", leaked, socketDetails(leaked)))
		}
		var segs []string
		for _, s := range segments() {
			// A domain's graph and a DDS gateway's delivery ledger
			// (rgaps daemon -dds) outlive their processes by design.
			if !strings.HasSuffix(s, "_graph") && !strings.HasSuffix(s, "_gateway") {
				segs = append(segs, s)
			}
		}
		if len(segs) > 0 {
			problems = append(problems, fmt.Sprintf("shared-memory segments left: %v", segs))
		}
		if len(problems) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Eventually polls cond until it holds or the timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// socketDetails finds leaked sockets in /proc/self/net (their addresses
// say which connection was left open).
func socketDetails(leaked []string) string {
	var out []string
	for _, l := range leaked {
		i := strings.Index(l, "socket:[")
		if i < 0 {
			continue
		}
		inode := strings.TrimSuffix(l[i+len("socket:["):], "]")
		for _, f := range []string{"tcp", "tcp6", "unix"} {
			b, _ := os.ReadFile("/proc/self/net/" + f)
			for _, line := range strings.Split(string(b), "\n") {
				if fields := strings.Fields(line); len(fields) > 9 && slices.Contains(fields, inode) {
					out = append(out, f+": "+strings.Join(fields, " "))
				}
			}
		}
	}
	if len(out) == 0 {
		return ""
	}
	return " (" + strings.Join(out, "; ") + ")"
}

// AtLeastLeakGrace makes the leak check of this test binary wait at least d
// (call it from TestMain, before Main): for a package whose teardown closes
// something a known while late. Say why where you call it.
func AtLeastLeakGrace(d time.Duration) {
	if d > leakGrace {
		leakGrace = d
	}
}

// leakGrace is how long the leak check waits for descriptors and goroutines
// to go (RGAPS_LEAK_GRACE, e.g. 30s, when hunting for something closed
// late rather than never).
var leakGrace = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RGAPS_LEAK_GRACE")); err == nil {
		return d
	}
	return 5 * time.Second
}()

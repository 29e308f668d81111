package test

// The rgaps CLI driven as a user drives it: the binary is built once, and
// every command runs in its own process (inheriting this run's
// RGAPS_SHM_PREFIX, so the leak check of TestMain covers what they leave).
// Domains 60–69 are these tests'. Nothing here asserts a duration: waits
// poll for a condition until a generous deadline.

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// cliTimeout bounds any one command; a loaded machine with the race
// detector needs seconds, not minutes.
const cliTimeout = 2 * time.Minute

// buildCLI builds cmd/rgaps into dir, with the race detector when this test
// binary has it.
func buildCLI(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "rgaps")
	args := []string{"build", "-o", bin}
	if raceEnabled() {
		args = append(args, "-race")
	}
	cmd := exec.Command(goTool, append(args, "github.com/rmw-rgaps/rmw_rgaps/cmd/rgaps")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// syncBuffer collects a process's output while the test reads it.
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

// cliProc is a running rgaps command.
type cliProc struct {
	args        []string
	cmd         *exec.Cmd
	stdout, err syncBuffer
	done        chan struct{}
}

func startCLI(t *testing.T, bin string, args ...string) *cliProc {
	t.Helper()
	return startCLIEnv(t, bin, nil, args...)
}

// startCLIEnv is startCLI with more environment variables (NAME=value).
func startCLIEnv(t *testing.T, bin string, env []string, args ...string) *cliProc {
	t.Helper()
	p := &cliProc{args: args, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "ROS_DOMAIN_ID=") // every command names its -domain
	p.cmd.Env = append(p.cmd.Env, env...)
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		// A race-enabled program sleeps 1 s at exit by default; these
		// tests start dozens of them.
		p.cmd.Env = append(p.cmd.Env, "GORACE="+strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.err
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("rgaps %q: %v", args, err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits for the command to exit and returns its exit code.
func (p *cliProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(cliTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("rgaps %q did not exit within %v\nstdout:\n%s\nstderr:\n%s", p.args, cliTimeout, p.stdout.String(), p.err.String())
	}
	code := p.cmd.ProcessState.ExitCode()
	if out := p.stdout.String() + p.err.String(); strings.Contains(out, "panic:") || strings.Contains(out, "DATA RACE") {
		t.Errorf("rgaps %q crashed or raced:\n%s", p.args, out)
	}
	return code
}

// interrupt sends SIGINT, as Ctrl-C does, and expects a clean exit 0.
func (p *cliProc) interrupt(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t); code != 0 {
		t.Errorf("rgaps %q exited %d after SIGINT\nstderr:\n%s", p.args, code, p.err.String())
	}
}

func (p *cliProc) String() string {
	return fmt.Sprintf("rgaps %q\nstdout:\n%s\nstderr:\n%s", p.args, p.stdout.String(), p.err.String())
}

// runCLI runs a command to its end.
func runCLI(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	p := startCLI(t, bin, args...)
	code = p.wait(t)
	return p.stdout.String(), p.err.String(), code
}

// mustRun runs a command that must succeed.
func mustRun(t *testing.T, bin string, args ...string) string {
	t.Helper()
	out, errOut, code := runCLI(t, bin, args...)
	if code != 0 {
		t.Fatalf("rgaps %q exited %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}
	return out
}

func TestCLI(t *testing.T) {
	bin := buildCLI(t, t.TempDir())

	t.Run("PubEchoString", func(t *testing.T) {
		t.Parallel()
		// echo without -type waits for the topic and takes its type from
		// the graph; pub waits for echo's subscription before publishing.
		echo := startCLI(t, bin, "topic", "echo", "/cli_chatter", "-n", "3", "-domain", "60")
		pub := startCLI(t, bin, "topic", "pub", "/cli_chatter", "-times", "3", "-rate", "50", "-wait", "60", "-domain", "60", "hello")
		if code := echo.wait(t); code != 0 {
			t.Fatalf("echo exited %d\n%s", code, echo)
		}
		if got, want := echo.stdout.String(), strings.Repeat("data: hello\n---\n", 3); got != want {
			t.Errorf("echo printed %q, want %q\n%s", got, want, echo)
		}
		if code := pub.wait(t); code != 0 {
			t.Fatalf("pub exited %d\n%s", code, pub)
		}
		if n := strings.Count(pub.stdout.String(), "publishing #"); n != 3 {
			t.Errorf("pub printed %d messages\n%s", n, pub)
		}
	})

	t.Run("PubEchoRaw", func(t *testing.T) {
		t.Parallel()
		echo := startCLI(t, bin, "topic", "echo", "cli_raw", "-type", "rgaps/msg/Bytes", "-n", "2", "-domain", "61")
		pub := startCLI(t, bin, "topic", "pub", "cli_raw", "-size", "100", "-times", "2", "-rate", "50", "-wait", "60", "-domain", "61")
		if code := echo.wait(t); code != 0 {
			t.Fatalf("echo exited %d\n%s", code, echo)
		}
		// Message 1's counter pattern: words 1*0x9E3779B97F4A7C15 + k.
		want := "seq=1 size=100 bytes first=157c4a7fb979379e167c4a7fb979379e\n" +
			"seq=2 size=100 bytes first=2af894fe72f36e3c2bf894fe72f36e3c\n"
		if got := echo.stdout.String(); got != want {
			t.Errorf("echo printed %q, want %q\n%s", got, want, echo)
		}
		if code := pub.wait(t); code != 0 {
			t.Fatalf("pub exited %d\n%s", code, pub)
		}
	})

	t.Run("ListInfo", func(t *testing.T) {
		t.Parallel()
		pub := startCLI(t, bin, "topic", "pub", "/cli_list", "-rate", "20", "-qos", "sensor_data", "-wait", "0", "-domain", "62", "tick")
		raw := startCLI(t, bin, "topic", "pub", "/cli_list_raw", "-size", "64K", "-rate", "20", "-wait", "0", "-domain", "62")
		var list string
		testutil.Eventually(t, cliTimeout, "both topics in `topic list -t`", func() bool {
			list = mustRun(t, bin, "topic", "list", "-t", "-domain", "62")
			return strings.Contains(list, "/cli_list [std_msgs/msg/String]\n") && strings.Contains(list, "/cli_list_raw [rgaps/msg/Bytes]\n")
		})
		if plain := mustRun(t, bin, "topic", "list", "-domain", "62"); !strings.Contains(plain, "/cli_list\n") || strings.Contains(plain, "[") {
			t.Errorf("topic list printed %q", plain)
		}
		echo := startCLI(t, bin, "topic", "echo", "/cli_list", "-domain", "62")
		var info string
		testutil.Eventually(t, cliTimeout, "echo's subscription in `topic info`", func() bool {
			info = mustRun(t, bin, "topic", "info", "/cli_list", "-domain", "62")
			return strings.Contains(info, "Subscription count: 1")
		})
		if !strings.Contains(info, "Type: std_msgs/msg/String\nPublisher count: 1\n") {
			t.Errorf("topic info printed:\n%s", info)
		}
		info = mustRun(t, bin, "topic", "info", "cli_list", "-v", "-domain", "62")
		for _, want := range []string{
			"Type: std_msgs/msg/String",
			"Data path: host-shm",
			"Pool: ",
			"Publisher count: 1",
			"Node name: _rgaps_pub_" + strconv.Itoa(pub.cmd.Process.Pid),
			"Endpoint type: PUBLISHER",
			// sensor_data, and echo adapted to it.
			"QoS profile: best_effort, keep_last(5), volatile",
			"Process: " + strconv.Itoa(pub.cmd.Process.Pid),
			"Subscription count: 1",
			"Node name: _rgaps_echo_" + strconv.Itoa(echo.cmd.Process.Pid),
			"Endpoint type: SUBSCRIPTION",
			"QoS profile: best_effort, keep_last(10), volatile",
			"GID: ",
		} {
			if !strings.Contains(info, want) {
				t.Errorf("topic info -v lacks %q:\n%s", want, info)
			}
		}
		testutil.Eventually(t, cliTimeout, "echo to print a message", func() bool {
			return strings.Contains(echo.stdout.String(), "data: tick\n")
		})
		// Another type on an existing topic is an endpoint of its own, as in
		// DDS: the publish works and the String subscriber never sees it.
		_, errOut, code := runCLI(t, bin, "topic", "pub", "/cli_list", "-size", "1K", "-times", "1", "-wait", "0", "-domain", "62")
		if code != 0 {
			t.Errorf("pub of another type: exit %d, stderr %q", code, errOut)
		}
		for _, line := range strings.Split(echo.stdout.String(), "\n") {
			if line != "" && line != "---" && line != "data: tick" {
				t.Errorf("the String echo printed %q: a message of another type reached it", line)
			}
		}
		echo.interrupt(t)
		pub.interrupt(t)
		raw.interrupt(t)
		testutil.Eventually(t, cliTimeout, "the topics to leave `topic list`", func() bool {
			return mustRun(t, bin, "topic", "list", "-domain", "62") == ""
		})
	})

	t.Run("Hz", func(t *testing.T) {
		t.Parallel()
		pub := startCLI(t, bin, "topic", "pub", "/cli_hz", "-size", "1K", "-rate", "50", "-wait", "0", "-domain", "63")
		hz := startCLI(t, bin, "topic", "hz", "/cli_hz", "-domain", "63")
		testutil.Eventually(t, cliTimeout, "hz to print a rate", func() bool {
			out := hz.stdout.String()
			return strings.Contains(out, "average rate: ") && strings.Contains(out, "msgs/s") && strings.Contains(out, "window: ")
		})
		hz.interrupt(t)
		pub.interrupt(t)
	})

	t.Run("InterruptWhileWaiting", func(t *testing.T) {
		t.Parallel()
		// echo of a topic that never appears waits; Ctrl-C ends it cleanly.
		echo := startCLI(t, bin, "topic", "echo", "/cli_never", "-domain", "64")
		testutil.Eventually(t, cliTimeout, "echo to wait for the topic", func() bool {
			return strings.Contains(echo.err.String(), "waiting for topic /cli_never")
		})
		echo.interrupt(t)
		// And one subscribed with -type, blocked in a wait.
		echo = startCLI(t, bin, "topic", "echo", "/cli_never", "-type", "std_msgs/msg/String", "-domain", "64")
		testutil.Eventually(t, cliTimeout, "echo's subscription", func() bool {
			return strings.Contains(mustRun(t, bin, "topic", "list", "-domain", "64"), "/cli_never")
		})
		echo.interrupt(t)
	})

	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		for _, c := range []struct {
			args []string
			code int
			want string
		}{
			{[]string{"topic", "pub", "/bad name", "hi"}, 2, `invalid topic name "/bad name"`},
			{[]string{"topic", "echo", "1abc"}, 2, "invalid topic name"},
			{[]string{"topic", "info", "/a//b"}, 2, "repeated '/'"},
			{[]string{"topic", "info", "/cli_nothing", "-domain", "65"}, 1, "unknown topic /cli_nothing"},
			{[]string{"topic", "frob"}, 2, `unknown verb "frob"`},
			{[]string{"topic"}, 2, "usage: rgaps topic"},
			{[]string{"topic", "pub"}, 2, "missing argument"},
			{[]string{"topic", "pub", "/t", "-rate", "-3", "x"}, 2, "-rate"},
			{[]string{"topic", "pub", "/t", "-qos", "nope", "x"}, 2, "unknown QoS profile"},
			{[]string{"topic", "pub", "/t", "-bogus"}, 2, "flag provided but not defined: -bogus"},
			{[]string{"topic", "list", "-domain", "x"}, 2, "invalid value"},
			{[]string{"topic", "echo", "-h"}, 2, "usage: rgaps topic echo"},
			{[]string{"demo", "-subs", "0"}, 2, "-subs"},
		} {
			out, errOut, code := runCLI(t, bin, c.args...)
			if code != c.code || !strings.Contains(errOut, c.want) {
				t.Errorf("rgaps %q: exit %d, stderr %q; want exit %d and %q", c.args, code, errOut, c.code, c.want)
			}
			if out != "" {
				t.Errorf("rgaps %q printed %q on stdout", c.args, out)
			}
		}
	})

	t.Run("Demo", func(t *testing.T) {
		t.Parallel()
		// Two emulated hosts (the default): 1 subscriber with the
		// publisher, 2 on host b behind the bridge.
		out := mustRun(t, bin, "demo", "-n", "50", "-domain", "66")
		for _, want := range []string{
			"hosts:     ",
			"data path: host a: host-shm",
			"a → b:",
			"host b: host-shm",
			"published: 50 messages",
			"OK: all 150 deliveries (50 messages x 3 subscribers) verified byte for byte",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("demo output lacks %q:\n%s", want, out)
			}
		}
		out = mustRun(t, bin, "demo", "-hosts", "1", "-n", "50", "-domain", "67")
		for _, want := range []string{
			"data path: host-shm",
			"memory:    ",
			"OK: all 100 deliveries (50 messages x 2 subscribers) verified byte for byte",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("demo -hosts 1 output lacks %q:\n%s", want, out)
			}
		}
	})
}

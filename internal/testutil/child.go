package testutil

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
)

// ChildEnv names the role a re-executed test binary plays.
const ChildEnv = "RGAPS_TEST_CHILD"

var (
	rolesMu sync.Mutex
	roles   = map[string]func(args []string) error{}
)

// Role registers a function a child process can run (call from init).
func Role(name string, fn func(args []string) error) {
	rolesMu.Lock()
	roles[name] = fn
	rolesMu.Unlock()
}

func runChild() int {
	parts := strings.Split(os.Getenv(ChildEnv), "\x1f")
	rolesMu.Lock()
	fn := roles[parts[0]]
	rolesMu.Unlock()
	if fn == nil {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", parts[0])
		return 2
	}
	if err := fn(parts[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", parts[0], err)
		return 1
	}
	return 0
}

// Child is a running re-execution of the test binary in some role.
type Child struct {
	Cmd    *exec.Cmd
	Lines  chan string // lines the child prints on stdout
	stderr *strings.Builder
	done   chan error
	mu     sync.Mutex
}

// Start runs role with args in a new process of the test binary.
func Start(t testing.TB, role string, args ...string) *Child {
	t.Helper()
	return start(t, nil, role, args)
}

// StartIn is Start inside network namespace ns (netns.Wrap).
func StartIn(t testing.TB, ns, role string, args ...string) *Child {
	t.Helper()
	if ns == "" {
		return start(t, nil, role, args)
	}
	return start(t, netns.Wrap(ns), role, args)
}

func start(t testing.TB, wrap []string, role string, args []string) *Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	argv := append(append([]string(nil), wrap...), exe, "-test.run=^$")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), ChildEnv+"="+strings.Join(append([]string{role}, args...), "\x1f"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &Child{Cmd: cmd, Lines: make(chan string, 1024), stderr: &strings.Builder{}, done: make(chan error, 1)}
	cmd.Stderr = lockedWriter{c}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			c.Lines <- sc.Text()
		}
		close(c.Lines)
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() {
		select {
		case err := <-c.done: // exited already (ProcessState is the waiter's)
			c.done <- err
		default:
			cmd.Process.Kill()
			c.Wait(10 * time.Second)
		}
	})
	return c
}

type lockedWriter struct{ c *Child }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.stderr.Write(p)
}

// Stderr is what the child wrote on stderr so far.
func (c *Child) Stderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

// Expect waits for the next stdout line and checks that it starts with want.
func (c *Child) Expect(t testing.TB, want string, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-c.Lines:
		if !ok {
			t.Fatalf("child exited before printing %q; stderr:\n%s", want, c.Stderr())
		}
		if !strings.HasPrefix(l, want) {
			t.Fatalf("child printed %q, expected %q...; stderr:\n%s", l, want, c.Stderr())
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("child did not print %q within %v; stderr:\n%s", want, timeout, c.Stderr())
	}
	return ""
}

// Wait waits for the child to exit (draining its output) and returns its error.
func (c *Child) Wait(timeout time.Duration) error {
	go func() {
		for range c.Lines {
		}
	}()
	select {
	case err := <-c.done:
		c.done <- err
		return err
	case <-time.After(timeout):
		c.Cmd.Process.Kill()
		return fmt.Errorf("child did not exit within %v", timeout)
	}
}

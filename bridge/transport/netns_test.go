package transport_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// netnsRole is the role a re-executed test binary plays inside a network
// namespace: one side of every case, in order, over one side channel.
const netnsRole = "transport-netns-side"

func init() { testutil.Role(netnsRole, netnsSide) }

// netnsSide runs in a child: args are the variant, "listener" or
// "dialer", this side's address, the side channel's address (the
// dialer's only), and the case names.
func netnsSide(args []string) error {
	if len(args) < 5 {
		return fmt.Errorf("want variant, role, node, ctl address, cases; got %q", args)
	}
	v := variantNamed(args[0])
	if v == nil {
		return fmt.Errorf("unknown variant %q", args[0])
	}
	dialer, node := args[1] == "dialer", args[2]
	var conn net.Conn
	if dialer {
		c, err := net.DialTimeout("tcp", args[3], 30*time.Second)
		if err != nil {
			return err
		}
		conn = c
	} else {
		ln, err := net.Listen("tcp", net.JoinHostPort(node, "0"))
		if err != nil {
			return err
		}
		fmt.Println("ctl", ln.Addr())
		ln.(*net.TCPListener).SetDeadline(time.Now().Add(60 * time.Second))
		c, err := ln.Accept()
		ln.Close()
		if err != nil {
			return err
		}
		conn = c
	}
	c := newCtl(conn)
	defer func() {
		conn.Close()
		for range c.in {
		}
	}()
	for _, name := range strings.Split(args[4], ",") {
		cs := caseNamed(name)
		if cs == nil {
			return fmt.Errorf("unknown case %q", name)
		}
		if err := runSide(v, cs, dialer, node, c); err != nil {
			fmt.Printf("case %s fail %s\n", name, strings.ReplaceAll(err.Error(), "\n", " | "))
		} else {
			fmt.Printf("case %s ok\n", name)
		}
	}
	fmt.Println("end")
	return nil
}

// TestNetns runs the conformance cases with each side in its own process
// and network namespace, joined by a veth pair: two hosts as far as TCP is
// concerned. It needs root.
func TestNetns(t *testing.T) {
	hosts := testutil.NewHosts(t)
	nsA, nsB, addrA, addrB := hosts.NS[0], hosts.NS[1], hosts.Addr[0], hosts.Addr[1]
	for _, name := range []string{"fabric-tcp", "plaintcp"} {
		v := variantNamed(name)
		t.Run(name, func(t *testing.T) {
			p, err := v.open("127.0.0.1", time.Second)
			skipUnsupported(t, err)
			p.Close()
			runNetns(t, v, nsA, nsB, addrA, addrB)
		})
	}
}

// nsChild is the test binary re-executed in a role inside a namespace.
type nsChild struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr strings.Builder
	mu     sync.Mutex // guards stderr
	done   chan struct{}
}

func (c *nsChild) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.Write(p)
}

func (c *nsChild) errText() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

func startInNetns(t *testing.T, ns string, args ...string) *nsChild {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := &nsChild{lines: make(chan string, 256), done: make(chan struct{})}
	c.cmd = netns.Command(ns, exe, "-test.run=^$")
	c.cmd.Env = append(os.Environ(), testutil.ChildEnv+"="+strings.Join(append([]string{netnsRole}, args...), "\x1f"))
	c.cmd.Stderr = c
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		for range c.lines {
		}
		<-c.done
		c.cmd.Wait()
	})
	return c
}

// results reads "case NAME ok|fail ..." lines until "end".
func (c *nsChild) results(timeout time.Duration) (map[string]string, error) {
	res := map[string]string{}
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-c.lines:
			if !ok {
				return res, fmt.Errorf("exited before the end; stderr:\n%s", c.errText())
			}
			if l == "end" {
				return res, nil
			}
			if f := strings.SplitN(l, " ", 4); len(f) >= 3 && f[0] == "case" {
				res[f[1]] = strings.Join(f[2:], " ")
			}
		case <-deadline:
			return res, fmt.Errorf("no end within %v; stderr:\n%s", timeout, c.errText())
		}
	}
}

func runNetns(t *testing.T, v *variant, nsA, nsB, addrA, addrB string) {
	var names []string
	for _, cs := range cases {
		names = append(names, cs.name)
	}
	list := strings.Join(names, ",")
	l := startInNetns(t, nsA, v.name, "listener", addrA, "", list)
	var ctlAddr string
	select {
	case line, ok := <-l.lines:
		if !ok || !strings.HasPrefix(line, "ctl ") {
			t.Fatalf("listener printed %q; stderr:\n%s", line, l.errText())
		}
		ctlAddr = strings.TrimPrefix(line, "ctl ")
	case <-time.After(60 * time.Second):
		t.Fatalf("listener did not start; stderr:\n%s", l.errText())
	}
	d := startInNetns(t, nsB, v.name, "dialer", addrB, ctlAddr, list)
	var lres, dres map[string]string
	var lerr, derr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); lres, lerr = l.results(10 * time.Minute) }()
	go func() { defer wg.Done(); dres, derr = d.results(10 * time.Minute) }()
	wg.Wait()
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			for side, r := range map[string]string{"listener": lres[name], "dialer": dres[name]} {
				if r != "ok" {
					t.Errorf("%s in %s: %s", v.name, side, strings.TrimPrefix(r, "fail "))
				}
			}
		})
	}
	if err := errors.Join(lerr, derr); err != nil {
		t.Fatal(err)
	}
}

package netns_test

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

const (
	listenRole = "netns-listen" // args: address; echoes one line per connection
	dialRole   = "netns-dial"   // args: address, text; prints what came back
)

func init() {
	testutil.Role(listenRole, func(args []string) error {
		ln, err := net.Listen("tcp", args[0])
		if err != nil {
			return err
		}
		fmt.Println("listening")
		for {
			c, err := ln.Accept()
			if err != nil {
				return err
			}
			line, err := bufio.NewReader(c).ReadString('\n')
			if err == nil {
				_, err = c.Write([]byte(line))
			}
			c.Close()
			if err != nil {
				return err
			}
		}
	})
	testutil.Role(dialRole, func(args []string) error {
		c, err := net.DialTimeout("tcp", args[0], 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if _, err := fmt.Fprintln(c, args[1]); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		fmt.Print("got " + line)
		return nil
	})
}

func TestMain(m *testing.M) { testutil.Main(m) }

// TestPair makes two emulated hosts, checks that each namespace holds only
// its own veth end and that a process in one reaches the other over TCP,
// that taking the link down cuts it and bringing it up restores it, and
// that Close removes both namespaces.
func TestPair(t *testing.T) {
	h := testutil.NewHosts(t)
	for i := range h.NS {
		out, err := netns.Command(h.NS[i], "cat", "/proc/net/dev").CombinedOutput()
		if err != nil {
			t.Fatalf("reading host %d's interfaces: %v: %s", i, err, out)
		}
		if !strings.Contains(string(out), h.Iface[i]+":") || strings.Contains(string(out), h.Iface[1-i]+":") {
			t.Fatalf("namespace %s should hold %s and not %s:\n%s", h.NS[i], h.Iface[i], h.Iface[1-i], out)
		}
	}
	if out, err := os.ReadFile("/proc/net/dev"); err != nil || strings.Contains(string(out), h.Iface[0]+":") {
		t.Fatalf("this namespace must not hold the veth ends (%v):\n%s", err, out)
	}

	addr := net.JoinHostPort(h.Addr[1], "7311")
	srv := testutil.StartIn(t, h.NS[1], listenRole, addr)
	srv.Expect(t, "listening", 10*time.Second)
	dial := func() error {
		c := testutil.StartIn(t, h.NS[0], dialRole, addr, "hello")
		select {
		case l, ok := <-c.Lines:
			if !ok || l != "got hello" {
				return fmt.Errorf("dialer printed %q (exited: %v); stderr: %s", l, !ok, c.Stderr())
			}
		case <-time.After(10 * time.Second):
			return errors.New("no answer")
		}
		return c.Wait(10 * time.Second)
	}
	if err := dial(); err != nil {
		t.Fatal("host a to host b: ", err)
	}
	if err := h.LinkDown(0); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err == nil {
		t.Fatal("dialing succeeded with the link down")
	}
	if err := h.LinkUp(0); err != nil {
		t.Fatal(err)
	}
	if err := dial(); err != nil {
		t.Fatal("after the link came back: ", err)
	}

	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ns := range h.NS {
		if _, err := os.Stat(filepath.Join(netns.Dir, ns)); !os.IsNotExist(err) {
			t.Errorf("namespace %s still bound after Close: %v", ns, err)
		}
	}
}

// TestNewRejectsBadInput: a name that exists already and an address that
// is not one fail with an error and leave nothing behind.
func TestNewRejectsBadInput(t *testing.T) {
	if why := netns.Unavailable(); why != "" {
		t.Skip("network namespaces: ", why)
	}
	h := testutil.NewHosts(t)
	if _, err := netns.New(strings.TrimSuffix(h.NS[0], "a"), "rgdup", "10.249.3"); err == nil {
		t.Fatal("New with names already in use succeeded")
	}
	name := fmt.Sprintf("rgbad%d", os.Getpid()%100000)
	if _, err := netns.New(name, "rgbad", "not.an.address"); err == nil {
		t.Fatal("New with a bad subnet succeeded")
	}
	for _, side := range []string{"a", "b"} {
		if _, err := os.Stat(filepath.Join(netns.Dir, name+side)); !os.IsNotExist(err) {
			t.Errorf("namespace %s left behind: %v", name+side, err)
		}
	}
}

package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
)

// Hosts are two emulated hosts: network namespaces joined by a veth pair,
// with addresses only inside them. Tests create them with NewHosts and
// they are removed at the end of the test.
type Hosts struct {
	NS    [2]string // namespace names
	Addr  [2]string // IPv4 address of each side
	Iface [2]string // veth end inside each namespace
}

// NewHosts creates the namespaces, or skips the test saying why when this
// process cannot (not root, no ip(8), namespaces not permitted).
func NewHosts(t testing.TB) *Hosts {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("two emulated hosts need network namespaces, which need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("ip(8) not installed: ", err)
	}
	pid := os.Getpid()
	seq := hostSeq.Add(1)
	h := &Hosts{}
	x := (pid*7+int(seq))%250 + 1
	for i, side := range []string{"a", "b"} {
		h.NS[i] = fmt.Sprintf("rgt%d-%d%s", pid, seq, side)
		h.Iface[i] = fmt.Sprintf("rg%d%d%s", pid%100000, seq%100, side)
		h.Addr[i] = fmt.Sprintf("10.%d.%d.%d", 200+int(seq)%50, x, i+1)
	}
	if err := ipCmd("netns", "add", h.NS[0]); err != nil {
		if strings.Contains(err.Error(), "Operation not permitted") || strings.Contains(err.Error(), "Permission denied") {
			t.Skip("this root cannot create network namespaces: ", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { ipCmd("netns", "del", h.NS[0]) })
	if err := ipCmd("netns", "add", h.NS[1]); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ipCmd("netns", "del", h.NS[1]) })
	for _, args := range [][]string{
		{"link", "add", h.Iface[0], "netns", h.NS[0], "type", "veth", "peer", "name", h.Iface[1], "netns", h.NS[1]},
		{"-n", h.NS[0], "addr", "add", h.Addr[0] + "/24", "dev", h.Iface[0]},
		{"-n", h.NS[1], "addr", "add", h.Addr[1] + "/24", "dev", h.Iface[1]},
		{"-n", h.NS[0], "link", "set", h.Iface[0], "up"},
		{"-n", h.NS[1], "link", "set", h.Iface[1], "up"},
		{"-n", h.NS[0], "link", "set", "lo", "up"},
		{"-n", h.NS[1], "link", "set", "lo", "up"},
	} {
		if err := ipCmd(args...); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// LinkDown takes the veth pair down (from side i); LinkUp brings it back.
func (h *Hosts) LinkDown(i int) error { return ipCmd("-n", h.NS[i], "link", "set", h.Iface[i], "down") }

// LinkUp brings side i's veth end up again.
func (h *Hosts) LinkUp(i int) error { return ipCmd("-n", h.NS[i], "link", "set", h.Iface[i], "up") }

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

var hostSeq atomic.Int32

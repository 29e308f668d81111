package benche2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// netns is two network namespaces joined by a veth pair: hosts A and B as
// far as TCP and libfabric are concerned (one machine, one clock, one
// /dev/shm).
type netns struct {
	ip           string
	a, b         string
	addrA, addrB string
}

// newNetns creates the namespaces (root and ip(8) needed).
func newNetns() (*netns, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("-netns needs root (network namespaces)")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("-netns needs ip(8): %w", err)
	}
	pid := os.Getpid()
	x := pid%250 + 1
	n := &netns{ip: ip, a: fmt.Sprintf("rge2e%da", pid), b: fmt.Sprintf("rge2e%db", pid),
		addrA: fmt.Sprintf("10.232.%d.1", x), addrB: fmt.Sprintf("10.232.%d.2", x)}
	va, vb := fmt.Sprintf("rge%dva", pid), fmt.Sprintf("rge%dvb", pid)
	steps := [][]string{
		{"netns", "add", n.a},
		{"netns", "add", n.b},
		{"link", "add", va, "netns", n.a, "type", "veth", "peer", "name", vb, "netns", n.b},
		{"-n", n.a, "addr", "add", n.addrA + "/24", "dev", va},
		{"-n", n.b, "addr", "add", n.addrB + "/24", "dev", vb},
		{"-n", n.a, "link", "set", va, "up"},
		{"-n", n.b, "link", "set", vb, "up"},
		{"-n", n.a, "link", "set", "lo", "up"},
		{"-n", n.b, "link", "set", "lo", "up"},
	}
	for i, s := range steps {
		if err := n.run(s...); err != nil {
			if i > 0 {
				n.run("netns", "del", n.a)
			}
			if i > 1 {
				n.run("netns", "del", n.b)
			}
			return nil, err
		}
	}
	return n, nil
}

func (n *netns) run(args ...string) error {
	out, err := exec.Command(n.ip, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// close deletes both namespaces (and with them the veth pair).
func (n *netns) close() error {
	return errors.Join(n.run("netns", "del", n.a), n.run("netns", "del", n.b))
}

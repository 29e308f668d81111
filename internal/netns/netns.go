// Package netns emulates two hosts on one machine: two network namespaces
// joined by a veth pair, with addresses only inside them (ip(8), root).
// The demo, the tests and the benchmarks use it.
package netns

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Pair is two namespaces joined by a veth pair.
type Pair struct {
	NS    [2]string // namespace names
	Addr  [2]string // IPv4 address of each side, in subnet.0/24
	Iface [2]string // veth end inside each namespace
}

// New creates namespaces <name>a and <name>b (name at most 10 bytes for the
// interface names: ifName+"a"/"b", at most 15) with addresses
// subnet.1 and subnet.2 (subnet like "10.251.7"). On error nothing is left.
func New(name, ifName, subnet string) (*Pair, error) {
	p := &Pair{}
	for i, side := range []string{"a", "b"} {
		p.NS[i] = name + side
		p.Iface[i] = ifName + side
		p.Addr[i] = fmt.Sprintf("%s.%d", subnet, i+1)
	}
	if err := run("netns", "add", p.NS[0]); err != nil {
		return nil, err
	}
	if err := run("netns", "add", p.NS[1]); err != nil {
		run("netns", "del", p.NS[0])
		return nil, err
	}
	for _, args := range [][]string{
		{"link", "add", p.Iface[0], "netns", p.NS[0], "type", "veth", "peer", "name", p.Iface[1], "netns", p.NS[1]},
		{"-n", p.NS[0], "addr", "add", p.Addr[0] + "/24", "dev", p.Iface[0]},
		{"-n", p.NS[1], "addr", "add", p.Addr[1] + "/24", "dev", p.Iface[1]},
		{"-n", p.NS[0], "link", "set", p.Iface[0], "up"},
		{"-n", p.NS[1], "link", "set", p.Iface[1], "up"},
		{"-n", p.NS[0], "link", "set", "lo", "up"},
		{"-n", p.NS[1], "link", "set", "lo", "up"},
	} {
		if err := run(args...); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Close deletes both namespaces (and the veth pair with them).
func (p *Pair) Close() error {
	return errors.Join(run("netns", "del", p.NS[0]), run("netns", "del", p.NS[1]))
}

// LinkDown takes the veth pair down from side i; LinkUp brings it back.
func (p *Pair) LinkDown(i int) error { return run("-n", p.NS[i], "link", "set", p.Iface[i], "down") }

// LinkUp brings side i's veth end up again.
func (p *Pair) LinkUp(i int) error { return run("-n", p.NS[i], "link", "set", p.Iface[i], "up") }

// Unavailable says why this process cannot create namespaces ("" if it
// can, as far as can be told without trying: root and ip(8)).
func Unavailable() string {
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip(8)"
	}
	if out, err := exec.Command("id", "-u").Output(); err == nil && strings.TrimSpace(string(out)) != "0" {
		return "not root"
	}
	return ""
}

func run(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

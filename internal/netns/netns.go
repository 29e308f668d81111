// Package netns emulates two hosts on one machine: two network namespaces
// joined by a veth pair, with addresses only inside them. The demo, the
// tests and the benchmarks use it.
//
// It speaks rtnetlink itself (github.com/vishvananda/netlink and
// github.com/vishvananda/netns), so it needs root but not ip(8): the
// namespaces are named the way `ip netns` names them (bind mounts under
// /run/netns), and processes are started in one with nsenter(1), which is in
// util-linux (Essential in Debian, present on minimal images that lack
// iproute2).
package netns

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
)

// Dir is where named namespaces are bound, as ip(8) binds them.
const Dir = "/run/netns"

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
	for i := range p.NS {
		if err := create(p.NS[i]); err != nil {
			if i == 1 {
				remove(p.NS[0])
			}
			return nil, err
		}
	}
	if err := p.join(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// join makes the veth pair with an end in each namespace, gives each end
// its address and brings it and the loopback up.
func (p *Pair) join() error {
	var fds [2]vnetns.NsHandle
	for i := range fds {
		fd, err := vnetns.GetFromName(p.NS[i])
		if err != nil {
			return fmt.Errorf("opening namespace %s: %w", p.NS[i], err)
		}
		defer fd.Close()
		fds[i] = fd
	}
	veth := &netlink.Veth{
		LinkAttrs:     netlink.LinkAttrs{Name: p.Iface[0], Namespace: netlink.NsFd(fds[0])},
		PeerName:      p.Iface[1],
		PeerNamespace: netlink.NsFd(fds[1]),
	}
	if err := netlink.LinkAdd(veth); err != nil {
		return fmt.Errorf("creating veth pair %s/%s: %w", p.Iface[0], p.Iface[1], err)
	}
	for i := range fds {
		if err := inside(fds[i], func(h *netlink.Handle) error {
			l, err := h.LinkByName(p.Iface[i])
			if err != nil {
				return err
			}
			addr := &netlink.Addr{IPNet: &net.IPNet{IP: net.ParseIP(p.Addr[i]).To4(), Mask: net.CIDRMask(24, 32)}}
			if addr.IP == nil {
				return fmt.Errorf("bad address %q", p.Addr[i])
			}
			if err := h.AddrAdd(l, addr); err != nil {
				return fmt.Errorf("adding %s/24 to %s: %w", p.Addr[i], p.Iface[i], err)
			}
			if err := h.LinkSetUp(l); err != nil {
				return fmt.Errorf("bringing %s up: %w", p.Iface[i], err)
			}
			lo, err := h.LinkByName("lo")
			if err != nil {
				return err
			}
			return h.LinkSetUp(lo)
		}); err != nil {
			return fmt.Errorf("namespace %s: %w", p.NS[i], err)
		}
	}
	return nil
}

// Close deletes both namespaces (and the veth pair with them).
func (p *Pair) Close() error {
	return errors.Join(remove(p.NS[0]), remove(p.NS[1]))
}

// LinkDown takes the veth pair down from side i; LinkUp brings it back.
func (p *Pair) LinkDown(i int) error { return p.setLink(i, false) }

// LinkUp brings side i's veth end up again.
func (p *Pair) LinkUp(i int) error { return p.setLink(i, true) }

func (p *Pair) setLink(i int, up bool) error {
	fd, err := vnetns.GetFromName(p.NS[i])
	if err != nil {
		return fmt.Errorf("opening namespace %s: %w", p.NS[i], err)
	}
	defer fd.Close()
	return inside(fd, func(h *netlink.Handle) error {
		l, err := h.LinkByName(p.Iface[i])
		if err != nil {
			return fmt.Errorf("namespace %s: %w", p.NS[i], err)
		}
		if up {
			return h.LinkSetUp(l)
		}
		return h.LinkSetDown(l)
	})
}

// Command is name with args as a process in namespace ns (nsenter(1));
// ns "" runs it here.
func Command(ns, name string, args ...string) *exec.Cmd {
	argv := Wrap(ns, append([]string{name}, args...)...)
	return exec.Command(argv[0], argv[1:]...)
}

// Wrap is argv run in namespace ns: the nsenter(1) prefix and argv; ns ""
// returns argv.
func Wrap(ns string, argv ...string) []string {
	if ns == "" {
		return argv
	}
	return append([]string{"nsenter", "--net=" + filepath.Join(Dir, ns), "--"}, argv...)
}

// Unavailable says why this process cannot create namespaces ("" if it
// can, as far as can be told without trying: root and nsenter(1)).
func Unavailable() string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return "no nsenter(1) (util-linux)"
	}
	return ""
}

// create makes the named namespace on a thread of its own: the thread
// enters the new namespace to bind it, returns to its original one and is
// unlocked only then; if it cannot return, its goroutine ends locked and
// the runtime destroys the thread, so no other goroutine runs in the wrong
// namespace.
func create(name string) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := vnetns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			done <- fmt.Errorf("reading this thread's namespace: %w", err)
			return
		}
		defer orig.Close()
		ns, err := vnetns.NewNamed(name)
		if err == nil {
			ns.Close()
		} else {
			err = fmt.Errorf("creating network namespace %s: %w", name, err)
			// NewNamed leaves its mount point when the bind mount failed.
			os.Remove(filepath.Join(Dir, name))
		}
		if serr := vnetns.Set(orig); serr != nil {
			done <- errors.Join(err, fmt.Errorf("returning from namespace %s: %w", name, serr))
			return // still locked: the thread dies with the goroutine
		}
		runtime.UnlockOSThread()
		done <- err
	}()
	return <-done
}

// remove unmounts and deletes the named namespace; the kernel frees it
// (and the veth end inside) once no process is left in it.
func remove(name string) error {
	if err := vnetns.DeleteNamed(name); err != nil {
		return fmt.Errorf("deleting network namespace %s: %w", name, err)
	}
	return nil
}

// inside runs f with a netlink handle of namespace fd.
func inside(fd vnetns.NsHandle, f func(*netlink.Handle) error) error {
	h, err := netlink.NewHandleAt(fd)
	if err != nil {
		return fmt.Errorf("netlink handle: %w", err)
	}
	defer h.Close()
	return f(h)
}

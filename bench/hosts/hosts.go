// Package benchhosts is what the benchmarks of two emulated hosts share:
// the hosts (two network namespaces joined by a veth pair, package
// internal/netns, or this namespace twice over loopback), commands run on
// a host, and a pair of rgapsd processes (internal/daemonproc), one per
// host with its own shared-memory prefix, host b listening and host a
// dialling it.
package benchhosts

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// ErrNoNetns reports that the network namespaces could not be made.
var ErrNoNetns = errors.New("no network namespaces")

// ControlPort is the daemons' control port inside the namespaces (each
// namespace has its ports to itself); on loopback free ports are picked.
const ControlPort = 7790

// Pair is two emulated hosts, a (0) and b (1).
type Pair struct {
	// NS names each host's network namespace ("" on loopback) and Addr its
	// address.
	NS, Addr [2]string
	// Dir is the run's scratch directory (the secret, the daemons' logs),
	// removed by Close.
	Dir  string
	pair *netns.Pair
}

// New makes two network namespaces joined by a veth pair (root
// needed: otherwise an error wrapping ErrNoNetns that says why), or with
// loopback two hosts in this namespace over 127.0.0.1. tag (a few
// letters) names the namespaces and interfaces.
func New(tag string, loopback bool) (*Pair, error) {
	dir, err := os.MkdirTemp("", "rgaps-"+tag+"-")
	if err != nil {
		return nil, err
	}
	h := &Pair{Dir: dir, Addr: [2]string{"127.0.0.1", "127.0.0.1"}}
	if loopback {
		return h, nil
	}
	fail := func(err error) (*Pair, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %v (-loopback runs both hosts in this namespace)", ErrNoNetns, err)
	}
	if why := netns.Unavailable(); why != "" {
		return fail(errors.New("network namespaces: " + why))
	}
	pid := os.Getpid() % 1000000
	name := fmt.Sprintf("%.4s%d", tag, pid)
	p, err := netns.New(name, name, fmt.Sprintf("10.%d.%d", 234+len(tag)%8, pid%250+1))
	if err != nil {
		return fail(err)
	}
	h.pair, h.NS, h.Addr = p, p.NS, p.Addr
	return h, nil
}

// Netns reports whether the hosts are network namespaces.
func (h *Pair) Netns() bool { return h.pair != nil }

// Close removes the namespaces and the scratch directory.
func (h *Pair) Close() error {
	var err error
	if h.pair != nil {
		err = h.pair.Close()
	}
	return errors.Join(err, os.RemoveAll(h.Dir))
}

// Command runs name with args on host i (through nsenter(1), which
// executes it in place: the process is the command's).
func (h *Pair) Command(i int, name string, args ...string) *exec.Cmd {
	if h.NS[i] != "" {
		return netns.Command(h.NS[i], name, args...)
	}
	return exec.Command(name, args...)
}

// DaemonConfig is how a pair of daemons is started.
type DaemonConfig struct {
	Exe    string    // runs `Exe daemon FLAGS…` (rgapsd.Main)
	Prefix [2]string // each host's shared-memory prefix
	Env    []string  // added to both daemons' environments (after os.Environ)
	Flags  []string  // added to both daemons' flags (provider, ring size…)
	Tag    string    // host ids are Tag-a and Tag-b; log files Tag-a.log…
}

// Daemons is a started pair of rgapsd processes.
type Daemons struct {
	D      [2]*daemonproc.Daemon
	Prefix [2]string
}

// StartDaemons starts rgapsd on host b (listening) and host a (dialling
// b) and waits until both logged that their bridge started.
func (h *Pair) StartDaemons(c DaemonConfig) (ds *Daemons, err error) {
	ds = &Daemons{Prefix: c.Prefix}
	defer func() {
		if err != nil {
			ds.Stop()
		}
	}()
	secret, err := daemonproc.WriteSecret(h.Dir)
	if err != nil {
		return ds, err
	}
	var addr [2]string
	for i := range addr {
		port := ControlPort
		if h.pair == nil {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return ds, err
			}
			port = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		addr[i] = net.JoinHostPort(h.Addr[i], strconv.Itoa(port))
	}
	for _, i := range []int{1, 0} {
		args := append([]string{"daemon", "-listen", addr[i], "-secret-file", secret, "-host-id", fmt.Sprintf("%s-%c", c.Tag, 'a'+i)}, c.Flags...)
		if i == 0 {
			args = append(args, "-peers", addr[1])
		}
		cmd := h.Command(i, c.Exe, args...)
		cmd.Env = append(append(os.Environ(), c.Env...), "RGAPS_SHM_PREFIX="+c.Prefix[i], "RGAPS_DAEMON_IDLE=0")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		d, err := daemonproc.Start(fmt.Sprintf("rgapsd of host %c", 'a'+i), cmd, filepath.Join(h.Dir, fmt.Sprintf("%s-%c.log", c.Tag, 'a'+i)))
		if err != nil {
			return ds, err
		}
		ds.D[i] = d
		if err := d.WaitLog("bridge started", time.Minute); err != nil {
			return ds, err
		}
	}
	return ds, nil
}

// Pid is daemon i's process id.
func (ds *Daemons) Pid(i int) int { return ds.D[i].Cmd.Process.Pid }

// Stop stops both daemons and removes what is left under their prefixes
// (graph segments persist by design; topics are gone after a clean stop).
func (ds *Daemons) Stop() error {
	var errs []error
	for _, d := range ds.D {
		if d != nil {
			if err := d.Stop(15 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, p := range ds.Prefix {
		if p != "" {
			errs = append(errs, RemovePrefix(p))
		}
	}
	return errors.Join(errs...)
}

// WithLogs adds the ends of the daemons' logs to err (nil stays nil).
func (ds *Daemons) WithLogs(err error) error {
	if err == nil {
		return nil
	}
	for _, d := range ds.D {
		if d != nil {
			err = fmt.Errorf("%w\n%s: %s", err, d.Name, d.Tail())
		}
	}
	return err
}

// RemovePrefix removes what crashed processes left under prefix, then its
// graph segment; segments still in use are left.
func RemovePrefix(prefix string) error {
	if d, err := zerocopy.Open(zerocopy.Config{Prefix: prefix, NoDaemonAutostart: true, SkipStaleClean: true}); err == nil {
		d.CleanStale()
		d.Close()
	}
	var errs []error
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"_") && strings.HasSuffix(e.Name(), "_graph") {
			if err := os.Remove(filepath.Join("/dev/shm", e.Name())); err != nil && !os.IsNotExist(err) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

package benchscale

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// controlPort is the daemons' control port inside the namespaces (each
// namespace has its own ports); on loopback free ports are picked.
const controlPort = 7790

// hosts is the two emulated hosts of a run: two network namespaces
// joined by a veth pair (or, with Loopback, this namespace twice), each
// with its own shared-memory prefix.
type hosts struct {
	env  *benche2e.Env // Command runs a child role on a host
	pair *netns.Pair   // nil on loopback
	dir  string        // scratch: the secret, the daemons' logs
}

// newHosts makes the namespaces (unless loopback) and the work directory.
func newHosts(o Options) (h *hosts, err error) {
	dir, err := os.MkdirTemp("", "rgaps-scale-")
	if err != nil {
		return nil, err
	}
	h = &hosts{dir: dir, env: &benche2e.Env{Ctx: o.ctx, Exe: o.Exe, ChildArgs: o.ChildArgs, ChildEnv: o.ChildEnv,
		WorkDir: dir, PeerTimeout: o.Timeout + time.Minute,
		A: benche2e.Host{Name: "A", Addr: "127.0.0.1"}, B: benche2e.Host{Name: "B", Addr: "127.0.0.1"}}}
	if o.Loopback {
		return h, nil
	}
	if why := netns.Unavailable(); why != "" {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: network namespaces need root and ip(8): %s (-loopback runs both hosts in this namespace)", ErrNoNetns, why)
	}
	pid := os.Getpid()
	p, err := netns.New(fmt.Sprintf("rgsc%d", pid%1000000), fmt.Sprintf("rgsc%d", pid%1000000), fmt.Sprintf("10.233.%d", pid%250+1))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %v", ErrNoNetns, err)
	}
	h.pair = p
	h.env.Netns = true
	h.env.A = benche2e.Host{Name: "A", Netns: p.NS[0], Addr: p.Addr[0]}
	h.env.B = benche2e.Host{Name: "B", Netns: p.NS[1], Addr: p.Addr[1]}
	return h, nil
}

// ErrNoNetns reports that the namespaces could not be made.
var ErrNoNetns = errors.New("no network namespaces")

func (h *hosts) close() error {
	var err error
	if h.pair != nil {
		err = h.pair.Close()
	}
	return errors.Join(err, os.RemoveAll(h.dir))
}

// host returns host i (0: a, 1: b).
func (h *hosts) host(i int) benche2e.Host { return []benche2e.Host{h.env.A, h.env.B}[i] }

// daemons is one cell's two rgapsd processes.
type daemons struct {
	d      [2]*daemonproc.Daemon
	prefix [2]string
}

// hostEnv is what every process of host i gets: its prefix, small pools
// (the messages are 64 bytes), no idle exit of the daemon.
func hostEnv(prefix string) []string {
	return []string{"RGAPS_SHM_PREFIX=" + prefix, "RGAPS_POOL_SIZE=4MiB", "RGAPS_DAEMON_IDLE=0"}
}

// startDaemons starts rgapsd on host b (listening) and on host a
// (dialling b), each with its own prefix, and waits until they started.
func (h *hosts) startDaemons(o Options, cell int) (ds *daemons, err error) {
	ds = &daemons{}
	defer func() {
		if err != nil {
			ds.stop()
		}
	}()
	secret, err := daemonproc.WriteSecret(h.dir)
	if err != nil {
		return ds, err
	}
	var addr [2]string
	for i := range addr {
		port := controlPort
		if h.pair == nil {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return ds, err
			}
			port = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
		addr[i] = net.JoinHostPort(h.host(i).Addr, strconv.Itoa(port))
		ds.prefix[i] = fmt.Sprintf("%s%d%c", o.Prefix, cell, 'a'+i)
	}
	for _, i := range []int{1, 0} {
		args := []string{"daemon", "-listen", addr[i], "-secret-file", secret, "-host-id", fmt.Sprintf("scale-%c", 'a'+i),
			"-provider", o.Provider}
		if i == 0 {
			args = append(args, "-peers", addr[1])
		}
		cmd := h.env.Wrap(h.host(i))(o.Exe, args...)
		cmd.Env = append(append(os.Environ(), o.DaemonEnv...), hostEnv(ds.prefix[i])...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		d, err := daemonproc.Start(fmt.Sprintf("rgapsd of host %c", 'a'+i), cmd, filepath.Join(h.dir, fmt.Sprintf("daemon-%d%c.log", cell, 'a'+i)))
		if err != nil {
			return ds, err
		}
		ds.d[i] = d
		if err := d.WaitLog("bridge started", time.Minute); err != nil {
			return ds, err
		}
	}
	return ds, nil
}

// stop stops both daemons and removes what is left under their prefixes.
func (ds *daemons) stop() error {
	var errs []error
	for _, d := range ds.d {
		if d != nil {
			if err := d.Stop(15 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, p := range ds.prefix {
		if p == "" {
			continue
		}
		if d, err := zerocopy.Open(zerocopy.Config{Prefix: p, NoDaemonAutostart: true}); err == nil {
			d.CleanStale()
			d.Close()
		}
		removeGraph(p)
	}
	return errors.Join(errs...)
}

// removeGraph removes a prefix's graph segment (persistent by design).
func removeGraph(prefix string) {
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if len(e.Name()) > len(prefix) && e.Name()[:len(prefix)+1] == prefix+"_" {
			os.Remove(filepath.Join("/dev/shm", e.Name()))
		}
	}
}

// pid is daemon i's process id (ip netns exec execs the daemon in place).
func (ds *daemons) pid(i int) int { return ds.d[i].Cmd.Process.Pid }

// withLogs adds the ends of the daemons' logs to err.
func (ds *daemons) withLogs(err error) error {
	if err == nil {
		return nil
	}
	for _, d := range ds.d {
		if d != nil {
			err = fmt.Errorf("%w\n%s: %s", err, d.Name, d.Tail())
		}
	}
	return err
}

// child starts role on host i with the host's prefix.
func (h *hosts) child(i int, prefix, name, role string) (*benche2e.Child, error) {
	env := *h.env
	env.ChildEnv = append(append([]string{}, h.env.ChildEnv...), hostEnv(prefix)...)
	return benche2e.StartChild(&env, h.host(i), name, role)
}

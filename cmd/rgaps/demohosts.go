package main

// Two emulated hosts for `rgaps demo`: host a (the publisher's) and host b,
// each with its own rgapsd and its own shared-memory namespace (a prefix:
// two real hosts have separate /dev/shm). As root, the two
// daemons run in two network namespaces joined by a veth pair, addresses
// only inside them; otherwise both listen on loopback.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

type emuHosts struct {
	netns    bool
	pair     *netns.Pair
	ns       [2]string
	addr     [2]string
	prefix   [2]string
	provider string
	dir      string
	whyNot   string // why there are no namespaces, when auto fell back
	daemons  [2]*daemonproc.Daemon
}

// command is argv run as a process of host i: host b's processes run in
// its network namespace (GPU pools are served by the daemon of the
// process's namespace, so host b's readers and its daemon must share it).
func (h *emuHosts) command(i int, argv ...string) *exec.Cmd {
	if h.netns && i == 1 {
		argv = netns.Wrap(h.ns[1], argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = h.hostEnv(i)
	return cmd
}

// hostEnv is the environment of a process on host i.
func (h *emuHosts) hostEnv(i int) []string {
	return append(os.Environ(), "RGAPS_SHM_PREFIX="+h.prefix[i])
}

func (h *emuHosts) describe() string {
	if h.netns {
		return fmt.Sprintf("two network namespaces %s (%s) and %s (%s) joined by a veth pair; bridge over %s",
			h.ns[0], h.addr[0], h.ns[1], h.addr[1], h.provider)
	}
	why := h.whyNot
	if why == "" {
		why = netns.Unavailable()
	}
	if why == "" {
		why = "-wire loopback"
	}
	return fmt.Sprintf("two daemons on loopback (no network namespaces: %s); bridge over %s", why, h.provider)
}

// startHosts creates the hosts and starts both daemons; host a's shm
// prefix is the caller's.
func startHosts(exe string, o demoOpts, domain uint32, prefix string) (h *emuHosts, err error) {
	h = &emuHosts{prefix: [2]string{prefix, prefix + "hostb"}, provider: o.provider}
	if h.provider == "" {
		h.provider = "tcp"
		if fabric.Available {
			h.provider = "fabric:tcp"
		}
	}
	defer func() {
		if err != nil {
			h.stop()
		}
	}()
	if h.dir, err = os.MkdirTemp("", "rgaps-demo-"); err != nil {
		return h, err
	}
	secretFile, err := daemonproc.WriteSecret(h.dir)
	if err != nil {
		return h, err
	}
	pid := os.Getpid()
	h.netns = o.wire == "netns" || (o.wire == "auto" && netns.Unavailable() == "")
	port := [2]int{}
	if h.netns {
		p, err := netns.New(fmt.Sprintf("rgaps-demo-%d-", pid), fmt.Sprintf("rgd%d", pid%1000000), fmt.Sprintf("10.251.%d", pid%250+1))
		if err != nil {
			if o.wire == "netns" {
				return h, err
			}
			// auto: this root may not create namespaces (a container).
			h.netns, h.whyNot = false, err.Error()
		} else {
			h.pair, h.ns, h.addr = p, p.NS, p.Addr
			port = [2]int{7700 + int(domain), 7700 + int(domain)}
		}
	}
	if !h.netns {
		h.addr = [2]string{"127.0.0.1", "127.0.0.1"}
		for i := range port {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return h, err
			}
			port[i] = ln.Addr().(*net.TCPAddr).Port
			ln.Close()
		}
	}
	for _, i := range []int{1, 0} {
		args := []string{"daemon", "-domain", strconv.FormatUint(uint64(domain), 10),
			"-listen", net.JoinHostPort(h.addr[i], strconv.Itoa(port[i])), "-secret-file", secretFile,
			"-host-id", "demo-host-" + string(rune('a'+i)), "-provider", h.provider}
		if i == 0 {
			args = append(args, "-peers", net.JoinHostPort(h.addr[1], strconv.Itoa(port[1])))
		}
		argv := append([]string{exe}, args...)
		if h.netns {
			argv = netns.Wrap(h.ns[i], argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(h.hostEnv(i), "RGAPS_DAEMON_IDLE=0")
		d, err := daemonproc.Start(fmt.Sprintf("the daemon of host %c", 'a'+i), cmd, filepath.Join(h.dir, fmt.Sprintf("daemon-%c.log", 'a'+i)))
		if err != nil {
			return h, err
		}
		h.daemons[i] = d
		if err := d.WaitLog("bridge started", demoTimeout); err != nil {
			return h, err
		}
	}
	return h, nil
}

// remotePaths reads the data paths of host b's endpoints of topic from
// host b's shared memory (bridge endpoints excluded).
func (h *emuHosts) remotePaths(domain uint32, topic string) map[string]int {
	d, err := zerocopy.Open(zerocopy.Config{Prefix: h.prefix[1], Domain: domain, SkipStaleClean: true, NoDaemonAutostart: true})
	if err != nil {
		return nil
	}
	defer d.Close()
	eps, _ := d.Endpoints(topic)
	paths := map[string]int{}
	for _, e := range eps {
		if !e.Republish {
			paths[e.Path]++
		}
	}
	return paths
}

// logTail is the end of daemon i's log, for error reports.
func (h *emuHosts) logTail(i int) string {
	if h.daemons[i] == nil {
		return ""
	}
	return h.daemons[i].Tail()
}

// stop ends the daemons (SIGTERM, then SIGKILL) and removes the
// namespaces and the secret.
func (h *emuHosts) stop() error {
	var errs []error
	for _, d := range h.daemons {
		if d != nil {
			if err := d.Stop(10 * time.Second); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if h.pair != nil {
		if err := h.pair.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if h.dir != "" {
		os.RemoveAll(h.dir)
	}
	return errors.Join(errs...)
}

package benchscale

import (
	"fmt"
	"strconv"
	"time"

	benche2e "github.com/rmw-rgaps/rmw_rgaps/bench/e2e"
	benchhosts "github.com/rmw-rgaps/rmw_rgaps/bench/hosts"
)

// ErrNoNetns reports that the namespaces could not be made.
var ErrNoNetns = benchhosts.ErrNoNetns

// hosts is the two emulated hosts of a run and the child-process
// environment on them.
type hosts struct {
	*benchhosts.Pair
	env *benche2e.Env // StartChild runs a role on a host
}

// newHosts makes the namespaces (unless loopback).
func newHosts(o Options) (*hosts, error) {
	p, err := benchhosts.New("rgsc", o.Loopback)
	if err != nil {
		return nil, err
	}
	env := &benche2e.Env{Ctx: o.ctx, Exe: o.Exe, ChildArgs: o.ChildArgs, ChildEnv: o.ChildEnv,
		WorkDir: p.Dir, PeerTimeout: o.Timeout + time.Minute, Netns: p.Netns(),
		A: benche2e.Host{Name: "A", Netns: p.NS[0], Addr: p.Addr[0]}, B: benche2e.Host{Name: "B", Netns: p.NS[1], Addr: p.Addr[1]}}
	return &hosts{Pair: p, env: env}, nil
}

// host returns host i (0: a, 1: b).
func (h *hosts) host(i int) benche2e.Host { return []benche2e.Host{h.env.A, h.env.B}[i] }

// poolEnv: the messages are 64 bytes.
var poolEnv = []string{"RGAPS_POOL_SIZE=4MiB"}

// startDaemons starts a cell's daemons, each host with its own prefix.
func (h *hosts) startDaemons(o Options, cell int) (*benchhosts.Daemons, error) {
	return h.StartDaemons(benchhosts.DaemonConfig{Exe: o.Exe, Tag: fmt.Sprintf("scale%d", cell),
		Prefix: [2]string{fmt.Sprintf("%s%da", o.Prefix, cell), fmt.Sprintf("%s%db", o.Prefix, cell)},
		Env:    append(append([]string{}, o.DaemonEnv...), poolEnv...), Flags: daemonFlags(o)})
}

// daemonFlags are the daemons' flags: the provider, the ring size if set.
func daemonFlags(o Options) []string {
	f := []string{"-provider", o.Provider}
	if o.RingSize != 0 {
		f = append(f, "-ring-size", strconv.FormatUint(o.RingSize, 10))
	}
	return f
}

// child starts role on host i with the host's prefix.
func (h *hosts) child(i int, prefix, name, role string) (*benche2e.Child, error) {
	env := *h.env
	env.ChildEnv = append(append(append([]string{}, h.env.ChildEnv...), poolEnv...), "RGAPS_SHM_PREFIX="+prefix)
	return benche2e.StartChild(&env, h.host(i), name, role)
}

package benche2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"sync"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
)

// System is one way of getting a GPU-resident message from a publisher on
// host A to N GPU subscribers on host B: the thesis' baseline, the serial
// lower bound, or ours (the rgaps bridge). The harness drives every system
// through the same calls:
//
//	Start(env) once; then Round(size, n) for every n of env.Ns (ascending),
//	and within one n for every size of env.Sizes (ascending), env.Warmup
//	untimed rounds followed by env.Rounds timed ones; then Close once (also
//	after a failed Start or Round).
//
// Calls come from one goroutine, never concurrently. A system may set its
// subscribers up when n changes (the rounds of one n come together).
//
// A Round publishes one message of size bytes, already resident in device
// memory of host A's GPU (env.DeviceA), and returns when all n
// subscribers on host B hold a device pointer (on env.DeviceB) to the
// complete message, or with an error. The message's contents change from
// round to round; a system checks that every subscriber got the right
// bytes (a checksum per round) and fails the round otherwise.
//
// What an implementation can use: Env.Command, StartChild, Child,
// ChildControl, Serve and RegisterChild run and talk to processes on
// either host (in its network namespace); SeedOf and ExpectedChecksum
// give the message pattern of a round (fill with cuda's FillPattern,
// check with its Checksum kernel); env.GPU false means the host-memory
// fallback (no CUDA: "device memory" is host memory).
type System interface {
	// Name is the system's name in tables, plots and file names: short,
	// lower case ("baseline", "lower-bound", "rgaps").
	Name() string
	// Start sets the system up on env's hosts (processes, connections,
	// memory); nothing of it is timed.
	Start(env *Env) error
	// Round measures one message; see the type's comment.
	Round(size int64, n int) (Round, error)
	// Close stops every process and frees everything Start and Round made.
	Close() error
}

// Round is what one message took.
type Round struct {
	// PerSub is, for each of the n subscribers, the time from the start
	// of the publish call on host A to the moment that subscriber held a
	// device pointer to the complete data (the thesis' end-to-end
	// latency, Figure 4.6). len(PerSub) must be n.
	PerSub []time.Duration
	// Stages breaks the round down like the thesis' Tables 4.2–4.5
	// (D2H, IPC, network, publish, notify, H2D, ...), one duration per
	// stage (per-subscriber stages: their average). Optional; the
	// report lists the stages in the order StageOrder gives, if the
	// system implements it, else alphabetically.
	Stages map[string]time.Duration
}

// StageOrder, implemented optionally by a System, orders its stages in
// the report.
type StageOrder interface {
	StageOrder() []string
}

// Host is one side of the run.
type Host struct {
	Name  string // "A" (publish side) or "B" (subscribe side)
	Netns string // network namespace, "" : the harness's own
	Addr  string // this host's IP address, reachable from the other host
}

// Env is what a System gets from the harness.
type Env struct {
	Ctx    context.Context // cancelled when the run is interrupted
	Sizes  []int64         // message sizes, ascending
	Ns     []int           // subscriber counts, ascending
	Rounds int             // timed rounds per (size, n)
	Warmup int             // untimed rounds before them

	// GPU is true when the CUDA driver and a GPU are present; false: the
	// host-memory fallback (device memory is host memory, copies are
	// memcpy), which exercises every process and byte but measures no
	// GPU. DeviceA and DeviceB are the CUDA ordinals of the hosts' GPUs:
	// 0 and 1 on a machine with two GPUs, both 0 with one.
	GPU              bool
	DeviceA, DeviceB int

	// Netns is true when A and B are two network namespaces joined by a
	// veth pair (-netns); false: one namespace over loopback.
	Netns bool
	A, B  Host
	// Wire is the libfabric provider between the hosts: "shm" (one host,
	// the default there) or "tcp" (the default, and the only choice, with
	// Netns).
	Wire string

	// WorkDir is the run's scratch directory (sockets, configs), removed
	// at the end.
	WorkDir string
	// Exe is the executable whose hidden child command runs child roles
	// (RegisterChild); ChildArgs come before the role (for rgaps:
	// ChildCommand). ChildEnv is added to the environment of every
	// child.
	Exe       string
	ChildArgs []string
	ChildEnv  []string

	// IoxRouDi and IoxLibDir are iox-roudi and the directory of the
	// iceoryx libraries ("": the system's), for systems that use
	// iceoryx (the baseline).
	IoxRouDi, IoxLibDir string

	// PeerTimeout bounds every wait for a child's answer.
	PeerTimeout time.Duration
}

// Command returns the command that runs child role (RegisterChild) with
// args on host h: Exe in h's namespace (through nsenter(1), netns.Command), with
// ChildEnv.
func (e *Env) Command(h Host, role string, args ...string) *exec.Cmd {
	argv := append(append(append([]string{}, e.ChildArgs...), role), args...)
	var cmd *exec.Cmd
	if h.Netns != "" {
		cmd = netns.Command(h.Netns, e.Exe, argv...)
	} else {
		cmd = exec.Command(e.Exe, argv...)
	}
	cmd.Env = append(os.Environ(), e.ChildEnv...)
	return cmd
}

// Wrap returns a command that runs name with args on host h (for
// programs other than Exe, e.g. iox-roudi).
func (e *Env) Wrap(h Host) func(name string, args ...string) *exec.Cmd {
	return func(name string, args ...string) *exec.Cmd {
		if h.Netns != "" {
			return netns.Command(h.Netns, name, args...)
		}
		return exec.Command(name, args...)
	}
}

// Ours, when set (from an init function of the package that implements
// it, linked into the binary), makes the rgaps bridge's System; the
// harness runs it after the baseline and the lower bound. nil: the report
// says that ours was not measured.
var Ours func() System

var children = struct {
	sync.Mutex
	m map[string]func(args []string) error
}{m: map[string]func(args []string) error{}}

// RegisterChild registers a child role (from an init function): a
// process started with Env.Command(host, role, args...) runs fn(args).
// The roles of this package start with "e2e-".
func RegisterChild(role string, fn func(args []string) error) {
	children.Lock()
	defer children.Unlock()
	if _, dup := children.m[role]; dup {
		panic("benche2e: child role registered twice: " + role)
	}
	children.m[role] = fn
}

// ChildCommand is the hidden rgaps command that runs child roles:
// `rgaps-bench bench-e2e-child ROLE ARGS...`.
const ChildCommand = "bench-e2e-child"

// ChildMain runs the role args[0] with the rest of args.
func ChildMain(args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("%s: no role (this command is run by `rgaps-bench e2e` only)", ChildCommand)
	}
	children.Lock()
	fn := children.m[args[0]]
	var roles []string
	for r := range children.m {
		roles = append(roles, r)
	}
	children.Unlock()
	if fn == nil {
		sort.Strings(roles)
		return fmt.Errorf("%s: unknown role %q (known: %v)", ChildCommand, args[0], roles)
	}
	return fn(args[1:])
}

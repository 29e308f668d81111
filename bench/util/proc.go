// Package benchutil is what `rgaps-bench local` (bench/local) and `rgaps
// bench gpu` (bench/gpu) share: starting, talking to and ending
// subscriber processes, the framing of their control messages, the child's
// side of that, and the formatting of the Markdown reports.
package benchutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Kid is one subscriber process.
type Kid struct {
	I      int // its index, as errors name it
	Cmd    *exec.Cmd
	Pid    int
	Ctl    FD // parent ends of the socket pairs
	Data   FD
	stderr *TailBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// Procs starts, talks to and ends the subscriber processes of a run. Set
// the exported fields; the rest starts empty.
type Procs struct {
	Ctx context.Context
	// Child returns the command that starts one subscriber process.
	Child func() *exec.Cmd
	// Name names the child's ends of the socket pairs: Name+"-control"
	// and Name+"-data".
	Name string
	// PeerTimeout bounds every blocking read or write on a socket to a
	// child: a child that hangs fails the run instead of hanging it.
	PeerTimeout time.Duration
	// MaxFrame is the largest control frame read from a child.
	MaxFrame uint32

	mu       sync.Mutex // guards kids and killed against the cancel hook
	kids     []*Kid
	killed   bool
	stopHook func() bool
}

// Watch makes the cancellation of Ctx kill every child.
func (p *Procs) Watch() { p.stopHook = context.AfterFunc(p.Ctx, p.KillAll) }

// Kids are the children started so far, in the order of their indices.
func (p *Procs) Kids() []*Kid { return p.kids }

// SpawnN starts children 0 to n-1, stopping when Ctx is done.
func (p *Procs) SpawnN(n int) error {
	for i := range n {
		if err := p.Ctx.Err(); err != nil {
			return err
		}
		if _, err := p.Spawn(i); err != nil {
			return err
		}
	}
	return nil
}

// Spawn starts child i with its control socket on fd 3 and its data socket
// on fd 4.
func (p *Procs) Spawn(i int) (*Kid, error) {
	var ctl, data [2]int
	var err error
	if ctl, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	if data, err = syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0); err != nil {
		syscall.Close(ctl[0])
		syscall.Close(ctl[1])
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	ctlChild, dataChild := os.NewFile(uintptr(ctl[1]), p.Name+"-control"), os.NewFile(uintptr(data[1]), p.Name+"-data")
	defer ctlChild.Close()
	defer dataChild.Close()
	fail := func(err error) (*Kid, error) {
		syscall.Close(ctl[0])
		syscall.Close(data[0])
		return nil, err
	}
	for _, fd := range []int{ctl[0], data[0]} {
		if err := setTimeouts(fd, p.PeerTimeout); err != nil {
			return fail(fmt.Errorf("socket timeouts: %w", err))
		}
	}
	cmd := p.Child()
	cmd.ExtraFiles = []*os.File{ctlChild, dataChild} // fds 3 and 4
	cmd.Stdin, cmd.Stdout = nil, nil
	k := &Kid{I: i, Cmd: cmd, Ctl: FD(ctl[0]), Data: FD(data[0]), stderr: &TailBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = k.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Own process group: a terminal's ^C goes to the parent alone, which
	// cleans up. Pdeathsig: a parent killed outright takes its children.
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.killed {
		return fail(p.Ctx.Err())
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("starting subscriber %d: %w", i, err))
	}
	k.Pid = cmd.Process.Pid
	go func() {
		k.err = cmd.Wait()
		close(k.exited)
	}()
	p.kids = append(p.kids, k)
	return k, nil
}

// KillAll kills every child at once (cancellation, or an error).
func (p *Procs) KillAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.killed = true
	for _, k := range p.kids {
		k.Cmd.Process.Kill()
	}
}

// KidErr turns a failed exchange with a child into an error naming it and
// what it said on stderr (Ctx's error once Ctx is done).
func (p *Procs) KidErr(k *Kid, err error) error {
	if p.Ctx.Err() != nil {
		return p.Ctx.Err()
	}
	select {
	case <-k.exited:
	case <-time.After(200 * time.Millisecond):
	}
	msg := fmt.Sprintf("subscriber %d (pid %d): %v", k.I, k.Pid, err)
	select {
	case <-k.exited:
		msg += fmt.Sprintf("; it exited (%v)", k.err)
	default:
	}
	if s := strings.TrimSpace(k.stderr.String()); s != "" {
		msg += "; its stderr: " + s
	}
	return errors.New(msg)
}

// Send writes v as a frame to k's control socket.
func (p *Procs) Send(k *Kid, v any) error {
	if err := WriteFrame(k.Ctl, v); err != nil {
		return p.KidErr(k, err)
	}
	return nil
}

// SendAll sends v to each of kids.
func (p *Procs) SendAll(kids []*Kid, v any) error {
	for _, k := range kids {
		if err := p.Send(k, v); err != nil {
			return err
		}
	}
	return nil
}

// A Reply is a child's answer to a request: Failure is the child's error,
// "" when the request succeeded.
type Reply interface{ Failure() string }

// Collect reads one reply from each of kids in turn; a reply that failed
// ends it with the child's error. each, unless nil, sees every other reply
// (s is the kid's place in kids) and may end it with an error.
func Collect[R any, PR interface {
	*R
	Reply
}](p *Procs, kids []*Kid, each func(s int, k *Kid, rep *R) error) error {
	for s, k := range kids {
		var rep R
		if err := ReadFrame(k.Ctl, &rep, p.MaxFrame); err != nil {
			return p.KidErr(k, err)
		}
		if msg := PR(&rep).Failure(); msg != "" {
			return fmt.Errorf("subscriber %d: %s", k.I, msg)
		}
		if each != nil {
			if err := each(s, k, &rep); err != nil {
				return err
			}
		}
	}
	return nil
}

// Teardown ends a run. It ends the children: politely after a success
// (closing the control socket makes them leave the domain and exit; one
// still there after exitWait is killed, an error), killed after a failure.
// It closes rc (nil: never opened), after a failure reclaiming first what
// the killed children left, so that the topics can go; and, when private,
// it removes every segment of prefix from /dev/shm.
func (p *Procs) Teardown(failed bool, exitWait time.Duration, rc *rgaps.Context, prefix string, private bool) error {
	if p.stopHook != nil {
		p.stopHook()
	}
	if failed {
		p.KillAll()
	}
	var errs []error
	for _, k := range p.kids {
		syscall.Close(int(k.Ctl))
		syscall.Close(int(k.Data))
	}
	for _, k := range p.kids {
		select {
		case <-k.exited:
		case <-time.After(exitWait):
			k.Cmd.Process.Kill()
			<-k.exited
			errs = append(errs, fmt.Errorf("subscriber %d did not exit; killed", k.I))
		}
		if !failed && k.err != nil {
			errs = append(errs, p.KidErr(k, fmt.Errorf("exit: %w", k.err)))
		}
	}
	if rc != nil {
		if failed {
			rc.Engine().Reclaim() // slots of killed children
		}
		if err := rc.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if private {
		ents, _ := os.ReadDir("/dev/shm")
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix+"_") {
				if err := os.Remove(filepath.Join("/dev/shm", e.Name())); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// Finish is the end of a Run: it calls close (failed: err is not nil),
// whose error is the result after a success, and makes the error of a run
// whose ctx was cancelled wrap ctx's error.
func Finish(ctx context.Context, err error, close func(failed bool) error) error {
	if cerr := close(err != nil); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

// WaitMatched waits, up to timeout, until pub has n matched subscriptions.
func WaitMatched(ctx context.Context, pub *zerocopy.Publisher, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for pub.Matched() != n {
		if time.Now().After(deadline) {
			return fmt.Errorf("publisher matched %d subscriptions, want %d", pub.Matched(), n)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(100 * time.Microsecond)
	}
	return nil
}

// PrivatePrefix is the shared-memory prefix of a run of its own:
// "<RGAPS_SHM_PREFIX or rgaps>-<tag><pid>".
func PrivatePrefix(tag string) string {
	base := os.Getenv("RGAPS_SHM_PREFIX")
	if base == "" {
		base = "rgaps"
	}
	return fmt.Sprintf("%.20s-%s%d", base, tag, os.Getpid())
}

// SelfCommand returns a function that starts this executable with args:
// the default way to start a subscriber process.
func SelfCommand(args ...string) (func() *exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the executable to run subscribers: %w", err)
	}
	return func() *exec.Cmd { return exec.Command(exe, args...) }, nil
}

// TailBuffer keeps the last 8 KiB written to it (a child's output); it is
// safe for concurrent use.
type TailBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if t.b.Len() > 8<<10 {
		t.b.Next(t.b.Len() - 8<<10)
	}
	return len(p), nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

package benche2e

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// Child processes of a system (the baseline's, the lower bound's, and
// ours if it wants them) talk to the harness over a SOCK_STREAM socket
// pair (fd 3 in the child): frames of JSON (benchutil.WriteFrame), one
// reply per request, unless a role documents frames of its own. Every
// reply type embeds Status.
//
// Harness side: StartChild, then Call (or Send and Recv), then Stop (or
// StopAll). Child side (a role registered with RegisterChild):
// ChildControl, then Serve.

const (
	ctlFD    = 3
	maxFrame = 1 << 20
)

// Status is what every reply embeds: the child's error ("" : success).
type Status struct {
	Err string `json:"err,omitempty"`
}

// Failure implements benchutil.Reply.
func (f Status) Failure() string { return f.Err }

// Fail is the Status of err (nil: success).
func Fail(err error) Status {
	if err == nil {
		return Status{}
	}
	return Status{Err: err.Error()}
}

// Child is one child process, seen from the harness. Its methods must not
// be called concurrently.
type Child struct {
	name   string
	cmd    *osexec.Cmd
	ctl    benchutil.FD
	stderr *benchutil.TailBuffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// StartChild starts role (RegisterChild) with args on host h
// (Env.Command), its control socket on fd 3, in its own process group and
// killed if the harness dies; name names it in errors. Blocking reads and
// writes on the socket give up after env.PeerTimeout.
func StartChild(env *Env, h Host, name, role string, args ...string) (*Child, error) {
	return StartChildFiles(env, h, name, role, nil, args...)
}

// StartChildFiles is StartChild with files passed on to the child as fds
// 4, 5, … (a socket pair between two children, say).
func StartChildFiles(env *Env, h Host, name, role string, files []*os.File, args ...string) (*Child, error) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	child := os.NewFile(uintptr(fds[1]), name+"-control")
	defer child.Close()
	to := env.PeerTimeout
	if to <= 0 {
		to = 2 * time.Minute
	}
	tv := syscall.NsecToTimeval(to.Nanoseconds())
	syscall.SetsockoptTimeval(fds[0], syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	syscall.SetsockoptTimeval(fds[0], syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv)
	cmd := env.Command(h, role, args...)
	cmd.ExtraFiles = append([]*os.File{child}, files...)
	p := &Child{name: name, cmd: cmd, ctl: benchutil.FD(fds[0]), stderr: &benchutil.TailBuffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	// Own process group (a terminal's ^C reaches the harness alone, which
	// stops the children); a harness killed outright takes them along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		syscall.Close(fds[0])
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	live.Lock()
	live.m[p] = struct{}{}
	live.Unlock()
	go func() {
		p.err = cmd.Wait()
		live.Lock()
		delete(live.m, p)
		live.Unlock()
		close(p.exited)
	}()
	return p, nil
}

// live are the children running now, for killAll.
var live = struct {
	sync.Mutex
	m map[*Child]struct{}
}{m: map[*Child]struct{}{}}

// killAll kills every running child (the run was interrupted): their
// owners' pending reads fail at once, so the systems close promptly.
func killAll() {
	live.Lock()
	defer live.Unlock()
	for p := range live.m {
		p.cmd.Process.Kill()
	}
}

// Name is the name the child was started with.
func (p *Child) Name() string { return p.name }

// Pid is the child's process id.
func (p *Child) Pid() int { return p.cmd.Process.Pid }

// Output is the end (8 KiB) of what the child wrote on stdout and stderr.
func (p *Child) Output() string { return p.stderr.String() }

// Call sends req and reads the reply into rep (which embeds Status); a
// reply with an error is an error.
func (p *Child) Call(req any, rep benchutil.Reply) error {
	if err := p.Send(req); err != nil {
		return err
	}
	return p.Recv(rep)
}

// Send sends req.
func (p *Child) Send(req any) error {
	if err := benchutil.WriteFrame(p.ctl, req); err != nil {
		return p.wrap(err)
	}
	return nil
}

// Recv reads one reply (or frame) into rep; one with an error is an
// error.
func (p *Child) Recv(rep benchutil.Reply) error {
	if err := benchutil.ReadFrame(p.ctl, rep, maxFrame); err != nil {
		return p.wrap(err)
	}
	if msg := rep.Failure(); msg != "" {
		return fmt.Errorf("%s: %s", p.name, msg)
	}
	return nil
}

// wrap names the process in err and adds how it exited and the end of
// what it printed.
func (p *Child) wrap(err error) error {
	select {
	case <-p.exited:
	case <-time.After(300 * time.Millisecond):
	}
	msg := fmt.Sprintf("%s (pid %d): %v", p.name, p.cmd.Process.Pid, err)
	select {
	case <-p.exited:
		msg += fmt.Sprintf("; it exited (%v)", p.err)
	default:
	}
	if s := strings.TrimSpace(p.stderr.String()); s != "" {
		msg += "; its output: " + s
	}
	return errors.New(msg)
}

// Stop closes the control socket (the child's cue to clean up and exit)
// and waits up to wait; a child still there is killed (an error), and one
// that exited with an error is an error.
func (p *Child) Stop(wait time.Duration) error {
	syscall.Close(int(p.ctl))
	select {
	case <-p.exited:
	case <-time.After(wait):
		p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not exit within %v; killed; its output: %s", p.name, wait, p.stderr.String())
	}
	if p.err != nil {
		return fmt.Errorf("%s: exit: %v; its output: %s", p.name, p.err, strings.TrimSpace(p.stderr.String()))
	}
	return nil
}

// Kill ends the child at once (after a failure).
func (p *Child) Kill() {
	syscall.Close(int(p.ctl))
	p.cmd.Process.Kill()
	<-p.exited
}

// StopAll stops children (nil entries skipped) all at once, so their
// exits overlap, or kills them when failed; it joins their errors.
func StopAll(children []*Child, wait time.Duration, failed bool) error {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, p := range children {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if failed {
				p.Kill()
				return
			}
			if err := p.Stop(wait); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ChildControl is the child's side: it ignores SIGINT and SIGTERM (the
// harness stops it by closing the socket) and returns its control socket,
// blocking.
func ChildControl() (benchutil.FD, error) {
	signal.Ignore(os.Interrupt, syscall.SIGTERM)
	var st syscall.Stat_t
	if err := syscall.Fstat(ctlFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFSOCK {
		return 0, fmt.Errorf("fd %d is not a socket: this command is run by `rgaps-bench e2e` only", ctlFD)
	}
	if err := syscall.SetNonblock(ctlFD, false); err != nil {
		return 0, err
	}
	return benchutil.FD(ctlFD), nil
}

// Serve answers requests on ctl until the harness closes it (then nil).
// handle returns the reply to send (nil: it answered itself).
func Serve[R any](ctl benchutil.FD, handle func(req R) any) error {
	return benchutil.Serve(ctl, maxFrame, func(req R) (bool, error) {
		rep := handle(req)
		if rep == nil {
			return false, nil
		}
		return false, benchutil.WriteFrame(ctl, rep)
	})
}

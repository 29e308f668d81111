package benchros

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
)

// proc is a ros_bench process, driven over its stdin and stdout lines
// (examples/ros/rgaps_gpu_examples/src/ros_bench.cpp says what they are).
type proc struct {
	name  string
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string // its stdout lines; closed at its end
	out   *benchutil.TailBuffer
	done  chan struct{}
}

// startProc starts bin with args and env (the whole environment) in its
// own process group, killed if the harness dies.
func startProc(name, bin string, env []string, args ...string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	p := &proc{name: name, cmd: cmd, lines: make(chan string, 64), out: &benchutil.TailBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var err error
	if p.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// send writes one line to the process.
func (p *proc) send(format string, a ...any) error {
	if _, err := fmt.Fprintf(p.in, format+"\n", a...); err != nil {
		return p.fail(err)
	}
	return nil
}

// expect reads lines until one that starts with word (others are kept as
// output) and returns its other fields; "error ...", the process's end or
// the timeout are errors.
func (p *proc) expect(word string, timeout time.Duration) ([]string, error) {
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return nil, p.fail(fmt.Errorf("exited while we waited for %q", word))
			}
			f := strings.Fields(l)
			switch {
			case len(f) > 0 && f[0] == word:
				return f[1:], nil
			case len(f) > 0 && f[0] == "error":
				return nil, p.fail(fmt.Errorf("%s", strings.TrimPrefix(l, "error ")))
			}
			p.out.Write([]byte(l + "\n"))
		case <-deadline:
			return nil, p.fail(fmt.Errorf("no %q within %v", word, timeout))
		}
	}
}

// fail names the process in err and adds the end of its output.
func (p *proc) fail(err error) error {
	msg := fmt.Sprintf("%s (pid %d): %v", p.name, p.cmd.Process.Pid, err)
	if s := strings.TrimSpace(p.out.String()); s != "" {
		msg += "; its output: " + s
	}
	return fmt.Errorf("%s", msg)
}

// stop closes its stdin (its cue to exit) and waits up to wait, then
// kills its process group; kill skips the wait.
func (p *proc) stop(wait time.Duration, kill bool) error {
	p.in.Close()
	if !kill {
		select {
		case <-p.done:
			return nil
		case <-time.After(wait):
		}
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
	if kill {
		return nil
	}
	return p.fail(fmt.Errorf("did not exit within %v; killed", wait))
}

// stopAll stops procs at once (nil entries skipped) and joins their errors.
func stopAll(procs []*proc, wait time.Duration, kill bool) error {
	errs := make(chan error, len(procs))
	for _, p := range procs {
		go func() {
			if p == nil {
				errs <- nil
				return
			}
			errs <- p.stop(wait, kill)
		}()
	}
	var first error
	for range procs {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

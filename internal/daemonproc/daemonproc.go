// Package daemonproc runs rgapsd (`rgaps daemon`) as a child process for
// the demo and the benchmarks: a private cluster secret, the daemon's log
// in a file, a wait for a line of it, and a stop (SIGTERM, then SIGKILL).
package daemonproc

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// WriteSecret writes a fresh random cluster secret into dir (mode 0600)
// and returns its path.
func WriteSecret(dir string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "secret")
	return p, os.WriteFile(p, []byte(hex.EncodeToString(b)), 0o600)
}

// Daemon is a started daemon process.
type Daemon struct {
	Name   string // for errors: "the daemon of host a"
	Cmd    *exec.Cmd
	Log    string // its stdout and stderr
	exited chan struct{}
}

// Start starts cmd (its arguments and environment set) in its own process
// group, its output going to logPath.
func Start(name string, cmd *exec.Cmd, logPath string) (*Daemon, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Start()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &Daemon{Name: name, Cmd: cmd, Log: logPath, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(d.exited) }()
	return d, nil
}

// WaitLog waits until the daemon logged want; an exit or the timeout is an
// error carrying the end of its log.
func (d *Daemon) WaitLog(want string, timeout time.Duration) error {
	for deadline := time.Now().Add(timeout); ; {
		b, _ := os.ReadFile(d.Log)
		if strings.Contains(string(b), want) {
			return nil
		}
		select {
		case <-d.exited:
			return fmt.Errorf("%s exited: %s", d.Name, d.Tail())
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not log %q within %v: %s", d.Name, want, timeout, d.Tail())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Tail is the end of the daemon's log.
func (d *Daemon) Tail() string {
	b, _ := os.ReadFile(d.Log)
	return string(b[max(0, len(b)-3000):])
}

// Stop sends SIGTERM and waits up to timeout, then kills; it reports a
// daemon that needed the kill.
func (d *Daemon) Stop(timeout time.Duration) error {
	d.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
		return nil
	case <-time.After(timeout):
		d.Cmd.Process.Kill()
		<-d.exited
		return fmt.Errorf("%s did not stop on SIGTERM", d.Name)
	}
}

package benchdds

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// The processes layout: the gateway runs in a daemon process (`daemon
// -dds`, rgapsd as `rgaps daemon -dds` runs it), every DDS endpoint in a
// child process of its own (ChildCommand), the rgaps endpoints in this
// process. DDS→DDS is a writer process to a reader process; one-way
// latency is the receive time less the send time stamped into the message
// (one clock: one host).

// startDaemon starts the gateway's daemon on the run's prefix and domain,
// carrying the processes layout's topics, and waits until it runs.
func (h *harness) startDaemon() error {
	dir, err := os.MkdirTemp("", "rgaps-bench-dds-")
	if err != nil {
		return err
	}
	h.dir = dir
	cmd := h.o.Command("daemon", "-dds", "-dds-topics", h.topic+"_"+h.tag(LayoutProcs, true)+"*", "-dds-ledger", "none")
	cmd.Env = append(os.Environ(), "RGAPS_SHM_PREFIX="+h.prefix, "ROS_DOMAIN_ID="+strconv.Itoa(int(h.o.Domain)),
		"ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST", "RGAPS_POOL_SIZE="+strconv.Itoa(poolSize))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d, err := daemonproc.Start("the gateway's daemon", cmd, filepath.Join(dir, "daemon.log"))
	if err != nil {
		return err
	}
	h.daemon = d
	return d.WaitLog("DDS gateway running", 30*time.Second)
}

// stopDaemon stops the daemon (SIGTERM) and removes its directory.
func (h *harness) stopDaemon() error {
	var err error
	if h.daemon != nil {
		err = h.daemon.Stop(30 * time.Second)
		h.daemon = nil
	}
	if h.dir != "" {
		os.RemoveAll(h.dir)
		h.dir = ""
	}
	return err
}

// kid is a child process running a DDS endpoint.
type kid struct {
	name    string
	cmd     *exec.Cmd
	in      io.WriteCloser
	lines   chan string
	stderr  *benchutil.TailBuffer
	exited  chan struct{}
	isReady bool // printed "matched"
}

func (h *harness) startKid(role, topic string, size int, kind string) (*kid, error) {
	k := &kid{name: fmt.Sprintf("the DDS %s process of %s", role, topic), lines: make(chan string, 1024),
		stderr: &benchutil.TailBuffer{}, exited: make(chan struct{})}
	k.cmd = h.o.Command(ChildCommand, role, strconv.Itoa(int(h.o.Domain)), topic, strconv.Itoa(size), kind)
	k.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	k.cmd.Stderr = k.stderr
	var err error
	if k.in, err = k.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := k.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := k.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", k.name, err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			k.lines <- sc.Text()
		}
		close(k.lines)
		k.cmd.Wait()
		close(k.exited)
	}()
	if _, err := k.expect("ready", 30*time.Second); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// expect waits for the next line, which must start with prefix.
func (k *kid) expect(prefix string, timeout time.Duration) (string, error) {
	select {
	case l, ok := <-k.lines:
		if !ok {
			return "", fmt.Errorf("%s exited: %s", k.name, k.stderr.String())
		}
		if !strings.HasPrefix(l, prefix) {
			return "", fmt.Errorf("%s said %q, not %q…", k.name, l, prefix)
		}
		return l, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("%s did not say %q within %v: %s", k.name, prefix, timeout, k.stderr.String())
	}
}

// matched reports whether the child has said its endpoint matched.
func (k *kid) matched() bool {
	if k.isReady {
		return true
	}
	select {
	case l := <-k.lines:
		k.isReady = l == "matched"
	default:
	}
	return k.isReady
}

func (k *kid) send(line string) error {
	_, err := io.WriteString(k.in, line+"\n")
	return err
}

// close ends the child: its stdin closed, then killed if it lingers.
func (k *kid) close() error {
	k.in.Close()
	select {
	case <-k.exited:
	case <-time.After(5 * time.Second):
		k.cmd.Process.Kill()
		<-k.exited
	}
	return nil
}

// latencyProcs measures one (path, size) cell of the processes layout.
func (h *harness) latencyProcs(ctx context.Context, path string, size int) (LatencyCell, error) {
	c := LatencyCell{Layout: LayoutProcs, Path: path, Size: size}
	topic := fmt.Sprintf("%s_%s_lat_%d_%d", h.topic, h.tag(LayoutProcs, path != PathDDS), size, slices.Index(Paths, path))
	var send func(seq uint64) error
	var recv func(seq uint64) (time.Duration, error)
	var ready []func() bool
	if path == PathToDDS {
		p, err := h.dom.NewPublisher(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: latQoS})
		if err != nil {
			return c, err
		}
		defer p.Close()
		msg := StringCDR(size)
		send = func(seq uint64) error { Stamp(msg, seq, time.Now()); return p.Publish(msg) }
		ready = append(ready, func() bool { return p.Matched() >= 1 })
	} else {
		k, err := h.startKid("send", topic, size, "lat")
		if err != nil {
			return c, err
		}
		defer k.close()
		send = func(seq uint64) error { return k.send(strconv.FormatUint(seq, 10)) }
		ready = append(ready, k.matched)
	}
	if path == PathFromDDS {
		s, err := h.dom.NewSubscription(zerocopy.EndpointSpec{Topic: topic, Type: typeName, Node: benchNode, QoS: latQoS})
		if err != nil {
			return c, err
		}
		defer s.Close()
		recv = func(seq uint64) (time.Duration, error) {
			smp, err := s.TakeWait(10 * time.Second)
			if err != nil {
				return 0, err
			}
			defer smp.Return()
			now := time.Now()
			if smp.Size() != size {
				return 0, fmt.Errorf("rgaps sample of %d bytes, want %d", smp.Size(), size)
			}
			got, at := Stamped(smp.Bytes())
			if got != seq {
				return 0, fmt.Errorf("message %d came, want %d", got, seq)
			}
			return now.Sub(at), nil
		}
		ready = append(ready, func() bool { return s.Matched() >= 1 })
	} else {
		k, err := h.startKid("recv", topic, size, "lat")
		if err != nil {
			return c, err
		}
		defer k.close()
		recv = func(seq uint64) (time.Duration, error) {
			l, err := k.expect("got ", 10*time.Second)
			if err != nil {
				return 0, err
			}
			var got uint64
			var ns int64
			if _, err := fmt.Sscanf(l, "got %d %d", &got, &ns); err != nil || got != seq {
				return 0, errors.Join(fmt.Errorf("%s said %q for message %d", k.name, l, seq), err)
			}
			return time.Duration(ns), nil
		}
		ready = append(ready, k.matched)
	}
	if err := waitFor(ctx, path+" endpoints to match", func() bool {
		return !slices.ContainsFunc(ready, func(f func() bool) bool { return !f() })
	}); err != nil {
		return c, err
	}
	var seq uint64
	round := func() (time.Duration, error) {
		seq++
		if err := send(seq); err != nil {
			return 0, err
		}
		return recv(seq)
	}
	for range h.o.Warmup {
		if _, err := round(); err != nil {
			return c, fmt.Errorf("warm-up: %w", err)
		}
	}
	n := RoundsFor(h.o.Rounds, size)
	c.Samples = make([]int64, 0, n)
	for i := range n {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		d, err := round()
		if err != nil {
			return c, fmt.Errorf("round %d: %w", i, err)
		}
		c.Samples = append(c.Samples, d.Nanoseconds())
	}
	c.Latency = benchutil.Summarize(c.Samples)
	return c, nil
}

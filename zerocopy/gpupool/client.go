package gpupool

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// Client talks to the daemon of one domain. Its methods are safe for
// concurrent use (requests are serialised on one connection).
type Client struct {
	mu sync.Mutex
	fd int
}

// Dial connects to the daemon, starting one when none answers and
// autostart is set: the `rgaps` binary named by RGAPS_DAEMON, else found
// on PATH, else next to the running executable, runs `rgaps daemon` in its
// own session with an idle timeout, so a single-host user starts nothing by
// hand and nothing lingers.
func Dial(prefix string, domain uint32, autostart bool) (*Client, error) {
	c, err := dial(prefix, domain)
	if err == nil || !autostart {
		return c, err
	}
	if err := startDaemon(prefix, domain); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err = dial(prefix, domain)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: started one, but it does not answer: %v", ErrNoDaemon, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func dial(prefix string, domain uint32) (*Client, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + SocketName(prefix, domain)}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("%w for domain %d (socket @%s): %v", ErrNoDaemon, domain, SocketName(prefix, domain), err)
	}
	c := &Client{fd: fd}
	if _, _, err := c.do(Request{Op: "ping"}); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// DaemonBinary finds the rgaps executable that can run the daemon.
func DaemonBinary() (string, error) {
	if p := os.Getenv("RGAPS_DAEMON"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("rgaps"); err == nil {
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		if filepath.Base(exe) == "rgaps" {
			return exe, nil
		}
		if p := filepath.Join(filepath.Dir(exe), "rgaps"); fileExists(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: cannot start one: no `rgaps` binary on PATH, beside this program, or in RGAPS_DAEMON", ErrNoDaemon)
}

func fileExists(p string) bool { st, err := os.Stat(p); return err == nil && !st.IsDir() }

func startDaemon(prefix string, domain uint32) error {
	bin, err := DaemonBinary()
	if err != nil {
		return err
	}
	logPath := filepath.Join(os.TempDir(), fmt.Sprintf("rgapsd-%s-d%d.log", prefix, domain))
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("%w: log file: %v", ErrNoDaemon, err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "daemon", "-domain", strconv.FormatUint(uint64(domain), 10), "-idle", idleTimeout())
	cmd.Env = append(os.Environ(), "RGAPS_SHM_PREFIX="+prefix)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%w: starting %s daemon: %v", ErrNoDaemon, bin, err)
	}
	// Reap it if it exits early (another daemon won the socket); a daemon
	// that runs on is adopted by init when we exit.
	go cmd.Wait()
	return nil
}

func idleTimeout() string {
	if v := os.Getenv("RGAPS_DAEMON_IDLE"); v != "" {
		return v
	}
	return "60s"
}

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	return err
}

func (c *Client) do(req Request) (Reply, int, error) {
	req.Version = ProtocolVersion
	b, err := json.Marshal(req)
	if err != nil {
		return Reply{}, -1, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fd < 0 {
		return Reply{}, -1, errors.New("gpupool client closed")
	}
	if err := unix.Sendmsg(c.fd, b, nil, nil, 0); err != nil {
		return Reply{}, -1, fmt.Errorf("%w: sending: %v", ErrNoDaemon, err)
	}
	buf := make([]byte, MaxMessage)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(c.fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return Reply{}, -1, fmt.Errorf("%w: no reply: %v", ErrNoDaemon, err)
	}
	// Keep the first descriptor received; close every other one, whatever
	// the messages look like.
	fd := -1
	if oobn > 0 {
		msgs, _ := unix.ParseSocketControlMessage(oob[:oobn])
		for i := range msgs {
			fds, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				continue
			}
			for _, f := range fds {
				if fd < 0 {
					fd = f
				} else {
					unix.Close(f)
				}
			}
		}
	}
	if fd >= 0 && req.Op != "pool" {
		unix.Close(fd)
		fd = -1
	}
	var r Reply
	if err := json.Unmarshal(buf[:n], &r); err != nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return Reply{}, -1, fmt.Errorf("malformed reply from the daemon: %v", err)
	}
	if !r.OK {
		if fd >= 0 {
			unix.Close(fd)
		}
		if r.NotSup {
			return r, -1, notSupported(r.Error)
		}
		return r, -1, fmt.Errorf("%w: %s", ErrRefused, r.Error)
	}
	return r, fd, nil
}

// Ping returns the daemon's pid.
func (c *Client) Ping() (int, error) {
	r, _, err := c.do(Request{Op: "ping"})
	return r.Pid, err
}

// Stats lists the daemon's pools.
func (c *Client) Stats() ([]PoolInfo, error) {
	r, _, err := c.do(Request{Op: "stats"})
	return r.Pools, err
}

// Mapping is a pool mapped into this process.
type Mapping struct {
	Ptr   cuda.DevicePtr
	Size  uint64
	Kind  string // HandleVMMFD or HandleIPC
	alloc *cuda.Allocation
	dev   *cuda.Device
}

// Close unmaps the pool from this process (the daemon keeps it).
func (m *Mapping) Close() error {
	if m.alloc != nil {
		return m.alloc.Close()
	}
	if m.dev != nil && m.Ptr != 0 {
		return m.dev.IpcCloseMemHandle(m.Ptr)
	}
	return nil
}

// Pool asks for the GPU pool of a topic segment and maps it on dev. tag is
// the instance tag of the segment the caller mapped (Value 0: not checked).
func (c *Client) Pool(dev *cuda.Device, segment string, tag Tag, size uint64) (*Mapping, error) {
	ord := 0
	if dev != nil {
		ord = dev.Ordinal()
	}
	r, fd, err := c.do(Request{Op: "pool", Segment: segment, TagOff: tag.Off, Tag: tag.Value, Size: size, Device: ord})
	if err != nil {
		return nil, fmt.Errorf("GPU pool for %s: %w", segment, err)
	}
	if dev == nil {
		if fd >= 0 {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("GPU pool for %s: no device to map it on", segment)
	}
	switch r.Handle {
	case HandleVMMFD:
		if fd < 0 {
			return nil, fmt.Errorf("GPU pool for %s: the daemon sent no descriptor", segment)
		}
		defer unix.Close(fd)
		a, err := dev.ImportFD(fd, r.Size)
		if err != nil {
			return nil, fmt.Errorf("importing the GPU pool of %s: %w", segment, err)
		}
		return &Mapping{Ptr: a.Ptr(), Size: r.Size, Kind: r.Handle, alloc: a}, nil
	case HandleIPC:
		if fd >= 0 {
			unix.Close(fd)
		}
		var h cuda.IpcMemHandle
		if len(r.IPC) != len(h) {
			return nil, fmt.Errorf("GPU pool for %s: IPC handle of %d bytes", segment, len(r.IPC))
		}
		copy(h[:], r.IPC)
		p, err := dev.IpcOpenMemHandle(h)
		if err != nil {
			return nil, fmt.Errorf("opening the GPU pool of %s: %w", segment, err)
		}
		return &Mapping{Ptr: p, Size: r.Size, Kind: r.Handle, dev: dev}, nil
	}
	if fd >= 0 {
		unix.Close(fd)
	}
	return nil, fmt.Errorf("GPU pool for %s: unknown handle kind %q", segment, r.Handle)
}

// notSupported is the daemon's "no GPU" answer: its text, matching
// cuda.ErrNotSupported with errors.Is.
type notSupported string

func (e notSupported) Error() string        { return "rgaps daemon: " + string(e) }
func (e notSupported) Is(target error) bool { return target == cuda.ErrNotSupported }

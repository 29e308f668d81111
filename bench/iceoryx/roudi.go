package iceoryx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// LibDirs are the directories the binding is looked for in before the
// loader's own search: $RGAPS_IOX_LIB, iox/lib beside the executable,
// build/iox/lib under the working directory; only those that hold
// libiceoryx_binding_c.so.2.
func LibDirs() []string {
	var dirs []string
	for _, d := range candidates("RGAPS_IOX_LIB", "lib") {
		if fileExists(filepath.Join(d, "libiceoryx_binding_c.so.2")) && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// candidates are the bundle's sub directories: $env, <exe dir>/iox/sub,
// build/iox/sub.
func candidates(env, sub string) []string {
	var out []string
	if d := os.Getenv(env); d != "" {
		out = append(out, d)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			out = append(out, filepath.Join(filepath.Dir(exe), "iox", sub))
		}
	}
	if wd, err := os.Getwd(); err == nil {
		out = append(out, filepath.Join(wd, "build", "iox", sub))
	}
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// FindRouDi finds iox-roudi: $RGAPS_IOX_ROUDI (a file), iox/bin beside
// the executable, build/iox/bin, then PATH. The error wraps
// ErrNotSupported.
func FindRouDi() (string, error) {
	if p := os.Getenv("RGAPS_IOX_ROUDI"); p != "" {
		if fileExists(p) {
			return p, nil
		}
		return "", fmt.Errorf("%w: RGAPS_IOX_ROUDI=%s: no such file", ErrNotSupported, p)
	}
	for _, d := range candidates("", "bin") {
		if p := filepath.Join(d, "iox-roudi"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("iox-roudi")
	if err != nil {
		return "", fmt.Errorf("%w: iox-roudi not found (install the Debian package iceoryx, set RGAPS_IOX_ROUDI, or carry build/iox from scripts/e2e-bundle.sh)", ErrNotSupported)
	}
	return p, nil
}

// RouDiLibDir is the library directory RouDi (and other processes using
// the binding) should get in LD_LIBRARY_PATH: the first of LibDirs, or ""
// for the system's.
func RouDiLibDir() string {
	if d := LibDirs(); len(d) > 0 {
		return d[0]
	}
	return ""
}

// Mempool is one of RouDi's pools: Count chunks of Size payload bytes.
type Mempool struct{ Size, Count int }

// ChunkOverhead is what a pool's chunk needs beyond the payload that a
// Publisher.Loan asks for (iceoryx's chunk header and the padding of the
// 64-byte payload alignment).
const ChunkOverhead = 128

// RouDiOptions configure StartRouDi.
type RouDiOptions struct {
	Exe      string    // iox-roudi; "" : FindRouDi
	LibDir   string    // LD_LIBRARY_PATH for it; "" : RouDiLibDir
	Dir      string    // where the configuration file is written
	Mempools []Mempool // the payload sizes to hold; ChunkOverhead is added
	// Wrap, unless nil, wraps the command (e.g. into `nsenter --net=…`, netns.Wrap).
	Wrap func(name string, args ...string) *exec.Cmd
	// LockWait bounds the wait for another run's RouDi to stop (default 10
	// minutes).
	LockWait time.Duration
}

// RouDi is a running iox-roudi started by StartRouDi.
type RouDi struct {
	cmd    *exec.Cmd
	lock   *os.File
	out    *tail
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// ConfigTOML is the RouDi configuration for pools (one shared segment).
func ConfigTOML(pools []Mempool) string {
	ps := slices.Clone(pools)
	slices.SortFunc(ps, func(a, b Mempool) int { return a.Size - b.Size })
	var b strings.Builder
	b.WriteString("[general]\nversion = 1\n\n[[segment]]\n")
	for _, p := range ps {
		size := (p.Size + ChunkOverhead + 7) &^ 7
		fmt.Fprintf(&b, "\n[[segment.mempool]]\nsize = %d\ncount = %d\n", size, p.Count)
	}
	return b.String()
}

// StartRouDi writes a configuration with opts.Mempools, takes the
// machine's RouDi lock (waiting for another run to finish), starts
// iox-roudi with process monitoring off and waits until it is ready for
// clients.
func StartRouDi(ctx context.Context, opts RouDiOptions) (*RouDi, error) {
	if len(opts.Mempools) == 0 {
		return nil, errors.New("RouDi: no mempools")
	}
	exe := opts.Exe
	if exe == "" {
		var err error
		if exe, err = FindRouDi(); err != nil {
			return nil, err
		}
	}
	libDir := opts.LibDir
	if libDir == "" {
		libDir = RouDiLibDir()
	}
	if opts.Dir == "" {
		opts.Dir = os.TempDir()
	}
	cfg := filepath.Join(opts.Dir, fmt.Sprintf("roudi-%d.toml", os.Getpid()))
	if err := os.WriteFile(cfg, []byte(ConfigTOML(opts.Mempools)), 0o644); err != nil {
		return nil, err
	}
	wait := opts.LockWait
	if wait == 0 {
		wait = 10 * time.Minute
	}
	lock, err := lockMachine(ctx, wait)
	if err != nil {
		return nil, err
	}
	args := []string{"-c", cfg, "-m", "off", "-l", "info"}
	var cmd *exec.Cmd
	if opts.Wrap != nil {
		cmd = opts.Wrap(exe, args...)
	} else {
		cmd = exec.Command(exe, args...)
	}
	cmd.Env = os.Environ()
	if libDir != "" {
		cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+libDir+prefixed(os.Getenv("LD_LIBRARY_PATH")))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	r := &RouDi{cmd: cmd, lock: lock, out: &tail{}, exited: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		lock.Close()
		return nil, fmt.Errorf("starting %s: %w", exe, err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			l := sc.Text()
			r.out.add(l)
			if strings.Contains(l, "RouDi is ready for clients") {
				once.Do(func() { close(ready) })
			}
		}
		io.Copy(io.Discard, pr)
	}()
	go func() {
		r.err = cmd.Wait()
		pw.Close()
		close(r.exited)
	}()
	select {
	case <-ready:
		return r, nil
	case <-r.exited:
		lock.Close()
		return nil, fmt.Errorf("iox-roudi exited at start (%v): %s", r.err, r.out.String())
	case <-ctx.Done():
		r.Stop()
		return nil, fmt.Errorf("iox-roudi not ready: %w: %s", ctx.Err(), r.out.String())
	case <-time.After(readyWait(opts.Mempools)):
	}
	r.Stop()
	return nil, fmt.Errorf("iox-roudi not ready after %v: %s", readyWait(opts.Mempools), r.out.String())
}

// readyWait bounds RouDi's start: it writes the management data of every
// chunk before it is ready, which took 30 s and more for 3 GiB of pools
// on a small VM.
func readyWait(pools []Mempool) time.Duration {
	var total int64
	for _, p := range pools {
		total += int64(p.Size+ChunkOverhead) * int64(p.Count)
	}
	return time.Minute + time.Duration(total>>30)*30*time.Second
}

func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ":" + s
}

// Stop ends RouDi (SIGTERM; SIGKILL after 10 s) and releases the lock.
// Processes registered with it should have shut down first.
func (r *RouDi) Stop() error {
	if r.lock == nil {
		return ErrClosed
	}
	defer func() {
		r.lock.Close()
		r.lock = nil
	}()
	select {
	case <-r.exited:
		removeRouDiFiles()
		return fmt.Errorf("iox-roudi had exited (%v): %s", r.err, r.out.String())
	default:
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.exited:
		removeRouDiFiles()
		return nil
	case <-time.After(10 * time.Second):
		r.cmd.Process.Kill()
		<-r.exited
		removeRouDiFiles()
		return fmt.Errorf("iox-roudi did not stop on SIGTERM; killed: %s", r.out.String())
	}
}

// iceoryx 2.0 keeps its sockets in /tmp (uds prefix) and its segments in
// /dev/shm: the management segment and one payload segment named after
// the user.
const udsDir = "/tmp"

// removeRouDiFiles removes what a RouDi of ours leaves when it stopped
// while processes registered with it were killed (still under the machine
// lock, so no other RouDi of rgaps owns them).
func removeRouDiFiles() {
	files := []string{filepath.Join(udsDir, "roudi"), filepath.Join(udsDir, "roudi.lock"),
		filepath.Join(udsDir, "iox-unique-roudi.lock"), "/dev/shm/iceoryx_mgmt"}
	if u, err := user.Current(); err == nil && u.Username != "" && !strings.ContainsAny(u.Username, "/.") {
		files = append(files, "/dev/shm/"+u.Username)
	}
	for _, f := range files {
		os.Remove(f)
	}
}

// RemoveRuntimeFiles removes the socket and lock file of the runtime
// name of a process that was killed (ShutdownRuntime does it for the
// process itself).
func RemoveRuntimeFiles(name string) { removeRuntimeFiles(name) }

func removeRuntimeFiles(name string) {
	if name == "" || strings.ContainsAny(name, "/") {
		return
	}
	os.Remove(filepath.Join(udsDir, name))
	os.Remove(filepath.Join(udsDir, name+".lock"))
}

// Output is the end of what RouDi printed.
func (r *RouDi) Output() string { return r.out.String() }

// lockMachine takes the exclusive flock that one RouDi per machine needs.
func lockMachine(ctx context.Context, wait time.Duration) (*os.File, error) {
	p := filepath.Join(os.TempDir(), "rgaps-iox-roudi.lock")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if err != syscall.EWOULDBLOCK {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", p, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another RouDi of rgaps held %s for %v", p, wait)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tail keeps RouDi's last 40 lines.
type tail struct {
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(l string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, l)
	if len(t.lines) > 40 {
		t.lines = t.lines[len(t.lines)-40:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

package gpupool_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

func init() {
	testutil.Daemon = func(ctx context.Context, args []string) error {
		return runPoolDaemon(ctx, args, testutil.Prefix())
	}
	// ping-as-nobody DOMAIN: connect as another user; print the reply.
	testutil.Role("ping-as", func(a []string) error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + gpupool.SocketName(testutil.Prefix(), 77)}); err != nil {
			return err
		}
		unix.Sendmsg(fd, []byte(`{"version":1,"op":"ping"}`), nil, nil, 0)
		buf := make([]byte, gpupool.MaxMessage)
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		if err != nil {
			return err
		}
		fmt.Println(string(buf[:n]))
		return nil
	})
}

// runPoolDaemon serves as the GPU pool daemon the engine auto-starts
// (`daemon -domain N -idle D`): the pool server of rgapsd, gpupool.Run. The
// engine must not import the bridge, so its tests run this part of
// rgapsd.Main.
func runPoolDaemon(ctx context.Context, args []string, prefix string) error {
	fs := flag.NewFlagSet("daemon", flag.ContinueOnError)
	domain := fs.Uint("domain", 0, "ROS domain id")
	idle := fs.Duration("idle", 0, "exit after this long unused")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := gpupool.ServerConfig{Prefix: prefix, Domain: uint32(*domain), AllowGroup: -1, Idle: *idle,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	if err := gpupool.Run(ctx, cfg); !errors.Is(err, gpupool.ErrRunning) {
		return err
	}
	return nil
}

func TestMain(m *testing.M) { testutil.Main(m) }

func startServer(t *testing.T, domain uint32, shmDir string) *gpupool.Server {
	t.Helper()
	srv, err := gpupool.Listen(gpupool.ServerConfig{Prefix: testutil.Prefix(), Domain: domain, AllowGroup: -1, ShmDir: shmDir})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		srv.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return srv
}

// A second daemon for the same domain cannot bind: one owner per host.
func TestOneDaemonPerDomain(t *testing.T) {
	startServer(t, 70, t.TempDir())
	_, err := gpupool.Listen(gpupool.ServerConfig{Prefix: testutil.Prefix(), Domain: 70, AllowGroup: -1})
	if !errors.Is(err, unix.EADDRINUSE) {
		t.Fatalf("second daemon: %v, want EADDRINUSE", err)
	}
}

// Ping, stats, and a pool request: on a machine without a GPU the reply is
// a typed not-supported error; with one, a mapped pool of the right size.
func TestPoolRequest(t *testing.T) {
	dir := t.TempDir()
	startServer(t, 71, dir)
	c, err := gpupool.Dial(testutil.Prefix(), 71, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if pid, err := c.Ping(); err != nil || pid != os.Getpid() {
		t.Fatalf("ping: pid %d, %v", pid, err)
	}
	if _, err := c.Pool(nil, "missing_segment", gpupool.Tag{}, 1<<20); err == nil {
		t.Fatal("pool for a segment that does not exist was granted")
	}
	os.WriteFile(filepath.Join(dir, "seg_a"), make([]byte, 64), 0o600)
	dev, err := cuda.Open(0)
	if errors.Is(err, cuda.ErrNotSupported) {
		// The request itself must come back as a typed not-supported error.
		if _, err := c.Pool(nil, "seg_a", gpupool.Tag{}, 1<<20); !errors.Is(err, cuda.ErrNotSupported) {
			t.Fatalf("pool without a GPU: %v, want ErrNotSupported", err)
		}
		t.Log("no GPU: checked the not-supported reply only")
		testutil.SkipWithoutGPU(t, err, cuda.ErrNotSupported)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	testutil.AllowCurrentFDs() // the driver's own, for the process's life
	m, err := c.Pool(dev, "seg_a", gpupool.Tag{}, 3<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Size < 3<<20 || m.Ptr == 0 {
		t.Fatalf("mapping %+v", m)
	}
	if err := dev.MemsetD8(m.Ptr, 7, 3<<20); err != nil {
		t.Fatal(err)
	}
	pools, err := c.Stats()
	if err != nil || len(pools) != 1 || pools[0].Segment != "seg_a" {
		t.Fatalf("stats: %+v %v", pools, err)
	}
	// The pool goes when its segment goes.
	os.Remove(filepath.Join(dir, "seg_a"))
	testutil.Eventually(t, 5*time.Second, "pool freed after its segment went", func() bool {
		p, _ := c.Stats()
		return len(p) == 0
	})
}

// Garbage and bad versions get an error reply, never a crash.
func TestMalformedRequests(t *testing.T) {
	startServer(t, 72, t.TempDir())
	for _, msg := range []string{"not json", `{"version":99,"op":"ping"}`, `{"version":1,"op":"format-disk"}`, `{"version":1,"op":"pool","segment":"","size":1}`, `{"version":1,"op":"pool","segment":"x","size":0}`, strings.Repeat("{", 4000)} {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + gpupool.SocketName(testutil.Prefix(), 72)}); err != nil {
			t.Fatal(err)
		}
		unix.Sendmsg(fd, []byte(msg), nil, nil, 0)
		buf := make([]byte, gpupool.MaxMessage)
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, 0)
		unix.Close(fd)
		var r gpupool.Reply
		if err != nil || json.Unmarshal(buf[:n], &r) != nil || r.OK || r.Error == "" {
			t.Errorf("request %.40q: reply %q (%v)", msg, buf[:n], err)
		}
	}
	c, err := gpupool.Dial(testutil.Prefix(), 72, false)
	if err != nil {
		t.Fatalf("daemon unusable after garbage: %v", err)
	}
	c.Close()
}

// The daemon serves only its own user (and root): another user is refused
// and nothing else happens.
func TestRefusesOtherUsers(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	startServer(t, 77, t.TempDir())
	// The test binary lives where only root may look: copy it out.
	dir, err := os.MkdirTemp("", "rgaps-nobody")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	exe, _ := os.Executable()
	bin, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "child"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(dir, "child"), "-test.run=^$")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), testutil.ChildEnv+"=ping-as")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":false`) || !strings.Contains(string(out), "may not use") {
		t.Fatalf("another user's ping was not refused: %s", out)
	}
}

// With no daemon running, the client starts one (RGAPS_DAEMON names the
// binary: here this test binary, which serves as `rgaps daemon`), and the
// daemon exits by itself once idle.
func TestAutostartAndIdleExit(t *testing.T) {
	t.Setenv("RGAPS_DAEMON", os.Args[0])
	t.Setenv("RGAPS_DAEMON_IDLE", "300ms")
	c, err := gpupool.Dial(testutil.Prefix(), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := c.Ping()
	if err != nil || pid == os.Getpid() {
		t.Fatalf("ping: %d %v", pid, err)
	}
	c.Close()
	testutil.Eventually(t, 20*time.Second, "idle daemon exits", func() bool {
		return !shm.Alive(shm.Owner{Pid: uint32(pid)})
	})
}

// Close stops the daemon even while clients stay connected.
func TestCloseWithConnectedClient(t *testing.T) {
	srv, err := gpupool.Listen(gpupool.ServerConfig{Prefix: testutil.Prefix(), Domain: 73, AllowGroup: -1, ShmDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	c, err := gpupool.Dial(testutil.Prefix(), 73, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve still running 10 s after Close with a client connected")
	}
	if _, err := c.Ping(); err == nil {
		t.Fatal("a closed daemon answered")
	}
}

// A request for a segment that was replaced since the client mapped it is
// refused: the client must never get its successor's pool.
func TestReplacedSegmentRefused(t *testing.T) {
	dir := t.TempDir()
	startServer(t, 74, dir)
	c, err := gpupool.Dial(testutil.Prefix(), 74, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	path := filepath.Join(dir, "seg_r")
	os.WriteFile(path, []byte("tag:\x01\x00\x00\x00\x00\x00\x00\x00"), 0o600)
	os.Remove(path) // the topic goes, and comes back under the same name
	os.WriteFile(path, []byte("tag:\x02\x00\x00\x00\x00\x00\x00\x00"), 0o600)
	_, err = c.Pool(nil, "seg_r", gpupool.Tag{Off: 4, Value: 1}, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "made again") {
		t.Fatalf("pool for a replaced segment: %v", err)
	}
}

// The tag a client holds is the one the daemon reads, whatever was written
// since: a request for a live segment is never refused as replaced (here it
// gets to the allocation: a pool, or "no GPU").
func TestLiveSegmentIdentityAccepted(t *testing.T) {
	startServer(t, 75, "")
	c, err := gpupool.Dial(testutil.Prefix(), 75, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seg, err := shm.Create(testutil.Prefix()+"_d75_tlive", 4096, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer seg.Close()
	seg.Uint64(64).Store(0xfeed)
	if err := seg.Publish(); err != nil {
		t.Fatal(err)
	}
	defer shm.Unlink(seg.Name())
	seg.Uint64(128).Store(7) // writes through the mapping after publishing
	_, err = c.Pool(nil, seg.Name(), gpupool.Tag{Off: 64, Value: 0xfeed}, 1<<20)
	if err != nil && strings.Contains(err.Error(), "made again") {
		t.Fatalf("live segment refused as replaced: %v", err)
	}
}

package test

// The C API (cmd/librgaps, include/rgaps.h) used from C, as a C program
// uses it: librgaps.so is built with `go build -buildmode=c-shared`, the
// example (examples/c) and two check programs (below) are compiled with gcc
// against include/rgaps.h, and run as separate processes with
// LD_LIBRARY_PATH pointing at the library. They inherit this run's
// RGAPS_SHM_PREFIX, so TestMain's leak check covers what they leave.
// Domains 80–89 are these tests'. The shared library is built without the
// race detector (ThreadSanitizer cannot map its shadow memory for a Go
// library loaded by a C program); under -race, RaceDetector runs the check
// program again linked with a race-enabled c-archive of the same code.

import (
	"bufio"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/rgapsd"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

func init() {
	// On a GPU machine the C programs start the GPU pool daemon: this test
	// binary serves as one (RGAPS_DAEMON=os.Args[0], see capiEnv).
	if testutil.Daemon == nil {
		testutil.Daemon = func(ctx context.Context, args []string) error {
			return rgapsd.Main(ctx, args, zerocopy.Config{Prefix: testutil.Prefix()}, os.Stderr)
		}
	}
}

// capiTimeout bounds any one C program.
const capiTimeout = 2 * time.Minute

// capiKit is what the subtests share: the built library and programs.
type capiKit struct {
	dir      string // librgaps.so and the programs
	lib      string
	example  string
	check    string
	dlopener string
	gpu      bool // this machine has a GPU the library can use
}

func TestCAPI(t *testing.T) {
	cc := capiCompiler(t)
	k := &capiKit{dir: t.TempDir()}
	k.lib = filepath.Join(k.dir, "librgaps.so")
	k.gpu = capiHasGPU(t)
	t.Logf("GPU: %v", k.gpu)

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	capiGoBuild(t, root, k.lib)
	inc := filepath.Join(root, "include")
	cflags := []string{"-std=c11", "-D_POSIX_C_SOURCE=200809L", "-Wall", "-Wextra", "-Werror", "-pedantic", "-I" + inc}

	k.example = filepath.Join(k.dir, "rgaps_example")
	capiRun(t, cc, append(cflags, "-o", k.example, filepath.Join(root, "examples", "c", "rgaps_example.c"), "-L"+k.dir, "-lrgaps")...)

	checkSrc := filepath.Join(k.dir, "capi_check.c")
	capiWrite(t, checkSrc, capiCheckC)
	k.check = filepath.Join(k.dir, "capi_check")
	capiRun(t, cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I"+inc, "-o", k.check, checkSrc, "-L"+k.dir, "-lrgaps", "-lpthread")

	dlSrc := filepath.Join(k.dir, "capi_dlopen.c")
	capiWrite(t, dlSrc, capiDlopenC)
	k.dlopener = filepath.Join(k.dir, "capi_dlopen")
	capiRun(t, cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I"+inc, "-o", k.dlopener, dlSrc, "-ldl")

	t.Run("Exports", func(t *testing.T) { capiExports(t, k) })
	t.Run("HeaderCXX", func(t *testing.T) { capiHeaderCXX(t, inc) })
	t.Run("ExamplePubSub", func(t *testing.T) { capiPubSub(t, k, 80, 500, 65536, "auto", "auto") })
	t.Run("ExampleTwoSubscribers", func(t *testing.T) { capiPubSub(t, k, 81, 200, 300000, "auto", "host", "auto") })
	t.Run("BadArgumentsAndGPU", func(t *testing.T) { capiCheck(t, k) })
	t.Run("BadEnvironment", func(t *testing.T) { capiBadEnv(t, k) })
	t.Run("DlopenNodelete", func(t *testing.T) { capiDlopen(t, k) })
	t.Run("RaceDetector", func(t *testing.T) { capiRace(t, k, cc, root, checkSrc) })
}

// capiCompiler finds gcc (or cc); without one the C API cannot be tested.
func capiCompiler(t *testing.T) string {
	for _, c := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Skip("no C compiler (gcc, cc) on PATH")
	return ""
}

// capiHasGPU says whether this process can use a CUDA device, the same
// test the library's RGAPS_MEMORY_AUTO makes.
func capiHasGPU(t *testing.T) bool {
	dom := uint32(89)
	c, err := rgaps.NewContext(rgaps.Options{Domain: &dom})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Engine().GPU()
	if errors.Is(err, zerocopy.ErrNotSupported) {
		if testutil.GPURequired() {
			t.Fatalf("RGAPS_REQUIRE_GPU=1 but: %v", err)
		}
		return false
	}
	if err != nil {
		t.Fatalf("opening the GPU: %v", err)
	}
	testutil.AllowCurrentFDs() // the driver's own, for the process's life
	return true
}

func capiGoBuild(t *testing.T, root, out string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-o", out, "./cmd/librgaps")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, b)
	}
}

func capiRun(t *testing.T, name string, args ...string) {
	t.Helper()
	if b, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

func capiWrite(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// capiEnv is the environment of a C program on domain dom.
func capiEnv(k *capiKit, dom int, extra ...string) []string {
	var env []string
	for _, e := range os.Environ() {
		switch strings.SplitN(e, "=", 2)[0] {
		case "ROS_DOMAIN_ID", "LD_LIBRARY_PATH", "RGAPS_QOS", "RGAPS_POOL_SIZE", "RGAPS_DAEMON", "RGAPS_DAEMON_IDLE":
			continue
		}
		env = append(env, e)
	}
	env = append(env,
		fmt.Sprintf("ROS_DOMAIN_ID=%d", dom),
		"LD_LIBRARY_PATH="+k.dir,
		"RGAPS_POOL_SIZE=32M",
		"RGAPS_DAEMON="+os.Args[0],
		"RGAPS_DAEMON_IDLE=2s",
	)
	return append(env, extra...)
}

// capiProc is a running C program.
type capiProc struct {
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    strings.Builder // stdout
	errOut strings.Builder // stderr
	lines  chan string     // stdout lines, as they come
	done   chan struct{}
}

func (p *capiProc) stdout() string { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }
func (p *capiProc) stderr() string { p.mu.Lock(); defer p.mu.Unlock(); return p.errOut.String() }

type capiLocked struct {
	p *capiProc
	b *strings.Builder
}

func (w capiLocked) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.b.Write(b)
}

func capiStart(t *testing.T, env []string, bin string, args ...string) *capiProc {
	t.Helper()
	p := startProc(t, env, nil, bin, args...)
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// startProc starts bin with env and stdin (nil: none) and pumps its
// stdout into p.out and, while someone reads them, p.lines; p.done closes
// once it exited. The caller ends it at cleanup.
func startProc(t *testing.T, env []string, stdin io.Reader, bin string, args ...string) *capiProc {
	t.Helper()
	p := &capiProc{name: filepath.Base(bin) + " " + strings.Join(args, " "), cmd: exec.Command(bin, args...),
		lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Env = env
	p.cmd.Stdin = stdin
	p.cmd.Stderr = capiLocked{p, &p.errOut}
	r, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			capiLocked{p, &p.out}.Write([]byte(sc.Text() + "\n"))
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, r)
		p.cmd.Wait()
		close(p.lines)
		close(p.done)
	}()
	return p
}

// expect waits for a stdout line starting with prefix.
func (p *capiProc) expect(t *testing.T, prefix string) {
	t.Helper()
	timer := time.NewTimer(capiTimeout)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s exited before printing %q\n%s", p.name, prefix, p)
			}
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-timer.C:
			t.Fatalf("%s did not print %q within %v\n%s", p.name, prefix, capiTimeout, p)
		}
	}
}

// wait waits for the program's exit and returns its code; a crash (a Go
// panic, a fatal signal) fails the test.
func (p *capiProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(capiTimeout):
		p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not exit within %v\n%s", p.name, capiTimeout, p)
	}
	st := p.cmd.ProcessState
	if ws, ok := st.Sys().(interface{ Signaled() bool }); ok && ws.Signaled() {
		t.Errorf("%s was killed by a signal: %v\n%s", p.name, st, p)
	}
	all := p.stdout() + p.stderr()
	for _, bad := range []string{"panic:", "fatal error:", "DATA RACE", "SIGSEGV"} {
		if strings.Contains(all, bad) {
			t.Errorf("%s crashed (%q)\n%s", p.name, bad, p)
		}
	}
	return st.ExitCode()
}

func (p *capiProc) String() string {
	return fmt.Sprintf("stdout:\n%s\nstderr:\n%s", p.stdout(), p.stderr())
}

// capiExports checks that the library exports the thesis' six functions
// and the rgaps_ functions of the header, and is marked never to unload.
func capiExports(t *testing.T, k *capiKit) {
	f, err := elf.Open(k.lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, s := range syms {
		if s.Section != elf.SHN_UNDEF && elf.ST_TYPE(s.Info) == elf.STT_FUNC {
			have[s.Name] = true
		}
	}
	for _, name := range []string{
		"publisher_init", "publisher_push", "publisher_destroy",
		"subscriber_init", "subscriber_pull", "subscriber_destroy",
		"rgaps_strerror", "rgaps_last_error", "rgaps_last_error_message", "rgaps_gpu_available",
		"rgaps_publisher_init_memory", "rgaps_publisher_matched", "rgaps_publisher_memory",
		"rgaps_subscriber_init_memory", "rgaps_subscriber_set_timeout", "rgaps_subscriber_message_size",
		"rgaps_subscriber_message_info", "rgaps_subscriber_release", "rgaps_subscriber_matched", "rgaps_subscriber_memory",
		"rgaps_device_alloc", "rgaps_device_free", "rgaps_device_fill_pattern", "rgaps_device_checksum",
		"rgaps_host_fill_pattern", "rgaps_host_checksum",
	} {
		if !have[name] {
			t.Errorf("librgaps.so does not export %s", name)
		}
	}
	if have["rgaps__set_message"] {
		t.Error("librgaps.so exports the private rgaps__set_message")
	}
	// Never unloaded: DF_1_NODELETE (Go's linker passes -z nodelete for
	// c-shared; capiDlopen checks the behaviour).
	flags, err := f.DynValue(elf.DT_FLAGS_1)
	if err != nil || len(flags) == 0 || flags[0]&uint64(elf.DF_1_NODELETE) == 0 {
		t.Errorf("librgaps.so lacks DF_1_NODELETE (DT_FLAGS_1 %v, %v)", flags, err)
	}
}

// capiHeaderCXX compiles the header as C++ (extern "C", no C-only syntax).
func capiHeaderCXX(t *testing.T, inc string) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		t.Skip("no g++")
	}
	src := filepath.Join(t.TempDir(), "h.cc")
	capiWrite(t, src, "#include \"rgaps.h\"\nint main() { return rgaps_strerror(RGAPS_OK) == nullptr; }\n")
	capiRun(t, cxx, "-std=c++11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I"+inc, src)
}

// capiPubSub runs one publisher and len(subMems) subscriber processes of
// the example, and checks every subscriber verified every message.
func capiPubSub(t *testing.T, k *capiKit, dom, n, size int, pubMem string, subMems ...string) {
	env := capiEnv(k, dom)
	topic := fmt.Sprintf("/capi_example_%d", dom)
	count, sz := fmt.Sprint(n), fmt.Sprint(size)
	var subs []*capiProc
	for _, m := range subMems {
		s := capiStart(t, env, k.example, "sub", topic, count, sz, m)
		s.expect(t, "ready")
		subs = append(subs, s)
	}
	pub := capiStart(t, env, k.example, "pub", topic, count, sz, pubMem)
	if code := pub.wait(t); code != 0 {
		t.Fatalf("publisher exited %d\n%s", code, pub)
	}
	wantMem := "host memory"
	if k.gpu && pubMem != "host" {
		wantMem = "gpu memory"
	}
	if !strings.Contains(pub.stdout(), wantMem) {
		t.Errorf("publisher did not use %s\n%s", wantMem, pub)
	}
	for i, s := range subs {
		if code := s.wait(t); code != 0 {
			t.Fatalf("subscriber %d (%s) exited %d\n%s", i, subMems[i], code, s)
		}
		want := fmt.Sprintf("verified %d messages", n)
		if !strings.Contains(s.stdout(), want) {
			t.Errorf("subscriber %d (%s) did not print %q\n%s", i, subMems[i], want, s)
		}
		t.Logf("subscriber %d (%s): %s", i, subMems[i], strings.TrimSpace(s.stdout()))
	}
	t.Logf("publisher: %s", strings.TrimSpace(pub.stdout()))
}

// capiCheck runs the check program: every bad argument gives its documented
// code, and the GPU functions give RGAPS_ENOTSUP without a GPU (or work
// with one).
func capiCheck(t *testing.T, k *capiKit) {
	p := capiStart(t, capiEnv(k, 82), k.check, "check")
	code := p.wait(t)
	out := p.stdout()
	oks := 0
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "FAIL"):
			t.Error(l)
		case strings.HasPrefix(l, "ok "):
			oks++
		}
	}
	if code != 0 {
		t.Errorf("capi_check exited %d\n%s", code, p)
	}
	if oks < 80 {
		t.Errorf("only %d checks passed\n%s", oks, p)
	}
	// The GPU section that ran must be the one for this machine.
	want, other := "ok nogpu: ", "ok gpu: "
	if k.gpu {
		want, other = other, want
	}
	if !strings.Contains(out, want) || strings.Contains(out, other) {
		t.Errorf("GPU checks: want lines %q and none %q (GPU: %v)\n%s", want, other, k.gpu, out)
	}
	if !k.gpu && !strings.Contains(out, "ok nogpu: publisher_init_memory(GPU) -> RGAPS_ENOTSUP") {
		t.Errorf("without a GPU, a GPU publisher must fail with RGAPS_ENOTSUP\n%s", out)
	}
	t.Logf("%d checks passed", oks)
}

// capiBadEnv: a bad ROS_DOMAIN_ID or RGAPS_QOS fails init with EINVAL.
func capiBadEnv(t *testing.T, k *capiKit) {
	for _, extra := range [][]string{
		{"ROS_DOMAIN_ID=not_a_number"},
		{"RGAPS_QOS=no_such_profile"},
	} {
		p := capiStart(t, capiEnv(k, 83, extra...), k.check, "env")
		if code := p.wait(t); code != 0 {
			t.Errorf("%v: capi_check env exited %d\n%s", extra, code, p)
		}
	}
	p := capiStart(t, capiEnv(k, 83, "RGAPS_QOS=sensor_data"), k.check, "envok")
	if code := p.wait(t); code != 0 {
		t.Errorf("RGAPS_QOS=sensor_data: capi_check envok exited %d\n%s", code, p)
	}
}

// capiDlopen: the library loads with dlopen and is never unloaded.
func capiDlopen(t *testing.T, k *capiKit) {
	p := capiStart(t, capiEnv(k, 84), k.dlopener, k.lib)
	if code := p.wait(t); code != 0 || !strings.Contains(p.stdout(), "ok still loaded after dlclose") {
		t.Errorf("capi_dlopen exited %d\n%s", code, p)
	}
}

// capiRace runs the check program (threads pushing, a destroy during a
// blocked pull, ...) with the library's Go code under the race detector:
// linked statically from -buildmode=c-archive -race into a non-PIE
// executable, where ThreadSanitizer's memory layout works.
func capiRace(t *testing.T, k *capiKit, cc, root, checkSrc string) {
	if !capiRaceEnabled() {
		t.Skip("the race detector is off (go test -race turns this on)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	archive := filepath.Join(t.TempDir(), "librgaps.a")
	cmd := exec.Command(goTool, "build", "-race", "-buildmode=c-archive", "-o", archive, "./cmd/librgaps")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -race -buildmode=c-archive: %v\n%s", err, b)
	}
	bin := filepath.Join(filepath.Dir(archive), "capi_check_race")
	capiRun(t, cc, "-no-pie", "-std=c11", "-I"+filepath.Join(root, "include"), "-o", bin, checkSrc, archive, "-lpthread", "-ldl", "-lm")
	p := capiStart(t, capiEnv(k, 85, "GORACE=halt_on_error=0 atexit_sleep_ms=0"), bin, "check")
	code := p.wait(t) // fails on "DATA RACE"
	if code != 0 || !strings.Contains(p.stdout(), "failures 0") {
		t.Errorf("race-enabled capi_check exited %d\n%s", code, p)
	}
}

func capiRaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" && s.Value == "true" {
			return true
		}
	}
	return false
}

// capiDlopenC loads the library with dlopen, uses it, dlcloses it and
// checks it is still mapped and working (RTLD_NODELETE).
const capiDlopenC = `#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include "rgaps.h"

typedef rgaps_publisher_t *(*init_fn)(char *);
typedef void (*destroy_fn)(rgaps_publisher_t *);
typedef int (*last_fn)(void);

int main(int argc, char **argv)
{
	void *h, *h2;
	init_fn init;
	destroy_fn destroy;
	last_fn last;
	rgaps_publisher_t *p;
	char topic[] = "/capi_dlopen";

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		printf("FAIL dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&init = dlsym(h, "publisher_init");
	*(void **)&destroy = dlsym(h, "publisher_destroy");
	*(void **)&last = dlsym(h, "rgaps_last_error");
	if (!init || !destroy || !last) {
		printf("FAIL dlsym\n");
		return 1;
	}
	p = init(topic);
	if (p == NULL) {
		printf("FAIL publisher_init: %d\n", last());
		return 1;
	}
	destroy(p);
	printf("ok used\n");
	if (dlclose(h) != 0) {
		printf("FAIL dlclose: %s\n", dlerror());
		return 1;
	}
	h2 = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
	if (h2 == NULL) {
		printf("FAIL unloaded by dlclose\n");
		return 1;
	}
	p = init(topic); /* the old pointers are still good */
	if (p == NULL) {
		printf("FAIL publisher_init after dlclose: %d\n", last());
		return 1;
	}
	destroy(p);
	printf("ok still loaded after dlclose\n");
	return 0;
}
`

// capiCheckC is the check program. Mode "check": bad arguments, handles,
// timeouts, threads and the GPU functions; "env": init must fail with
// RGAPS_EINVAL (bad environment); "envok": init must succeed.
const capiCheckC = `#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "rgaps.h"

static int failures;

#define OK(name, cond) do { \
	if (cond) printf("ok %s\n", name); \
	else { printf("FAIL %s (last error %d: %s)\n", name, rgaps_last_error(), rgaps_last_error_message()); failures++; } \
} while (0)

/* CODE: expr returns want, and rgaps_last_error() says the same. */
#define CODE(name, expr, want) do { \
	int rc_ = (expr); int last_ = rgaps_last_error(); \
	if (rc_ == (want) && last_ == (want)) printf("ok %s\n", name); \
	else { printf("FAIL %s: returned %d, last error %d (%s), want %d\n", name, rc_, last_, rgaps_last_error_message(), want); failures++; } \
} while (0)

/* VAL: expr returns the value want, and the call succeeded. */
#define VAL(name, expr, want) do { \
	int v_ = (expr); int last_ = rgaps_last_error(); \
	if (v_ == (want) && last_ == RGAPS_OK) printf("ok %s\n", name); \
	else { printf("FAIL %s: returned %d, last error %d (%s), want %d and success\n", name, v_, last_, rgaps_last_error_message(), want); failures++; } \
} while (0)

/* NUL: expr returns NULL and rgaps_last_error() is want. */
#define NUL(name, expr, want) do { \
	const void *p_ = (expr); int last_ = rgaps_last_error(); \
	if (p_ == NULL && last_ == (want)) printf("ok %s\n", name); \
	else { printf("FAIL %s: returned %p, last error %d (%s), want NULL and %d\n", name, p_, last_, rgaps_last_error_message(), want); failures++; } \
} while (0)

/* LAST: a void call recorded want. */
#define LAST(name, stmt, want) do { \
	stmt; int last_ = rgaps_last_error(); \
	if (last_ == (want)) printf("ok %s\n", name); \
	else { printf("FAIL %s: last error %d (%s), want %d\n", name, last_, rgaps_last_error_message(), want); failures++; } \
} while (0)

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- threads ---- */

struct blocked {
	rgaps_subscriber_t *sub;
	void *got;
	int code;
};

static void *pull_blocked(void *arg)
{
	struct blocked *b = arg;
	b->got = subscriber_pull(b->sub);
	b->code = rgaps_last_error();
	return NULL;
}

struct pusher {
	rgaps_publisher_t *pub;
	int id, n, failed;
};

static void *push_many(void *arg)
{
	struct pusher *p = arg;
	int i;
	for (i = 0; i < p->n; i++) {
		uint32_t msg[64];
		memset(msg, 0, sizeof msg);
		msg[0] = (uint32_t)p->id;
		msg[1] = (uint32_t)i;
		if (publisher_push(p->pub, sizeof msg, msg) != RGAPS_OK)
			p->failed++;
	}
	return NULL;
}

static void *tls_other(void *arg)
{
	rgaps_publisher_t *pub = arg;
	/* succeeds on this thread; must not change the main thread's code */
	return (void *)(intptr_t)rgaps_publisher_memory(pub);
}

static void check_strerror(void)
{
	int codes[] = {RGAPS_OK, RGAPS_ERROR, RGAPS_EINVAL, RGAPS_EBADHANDLE, RGAPS_ENOTSUP, RGAPS_ETIMEDOUT,
	               RGAPS_ECLOSED, RGAPS_EPOOL, RGAPS_ETOOLARGE, RGAPS_EQUEUEFULL, RGAPS_ETYPE, RGAPS_ELIMIT,
	               RGAPS_ECORRUPT, RGAPS_EDEVICE, RGAPS_EFAULT, RGAPS_ENOMEM, RGAPS_ENOMSG, RGAPS_EINTERNAL,
	               RGAPS_ENODAEMON};
	size_t i, j, n = sizeof codes / sizeof codes[0];
	int distinct = 1, nonempty = 1, stable = 1;
	for (i = 0; i < n; i++) {
		const char *s = rgaps_strerror(codes[i]);
		if (s == NULL || s[0] == '\0' || strcmp(s, "unknown rgaps error code") == 0)
			nonempty = 0;
		for (j = 0; j < i; j++)
			if (strcmp(s, rgaps_strerror(codes[j])) == 0)
				distinct = 0;
		if (codes[i] != -(int)i)
			stable = 0;
	}
	OK("strerror: every code has its own text", nonempty && distinct);
	OK("codes: OK is 0, errors are -1 ... -18 in header order", stable);
	OK("strerror(0) is success", strcmp(rgaps_strerror(0), "success") == 0);
	OK("strerror(unknown)", strcmp(rgaps_strerror(12345), "unknown rgaps error code") == 0 &&
	                            strcmp(rgaps_strerror(1), "unknown rgaps error code") == 0);
}

static void check_bad_names(void)
{
	char bad1[] = "", bad2[] = "bad name!", bad3[] = "/a//b", bad4[] = "/1abc", bad5[] = "trailing/";
	char *bad[] = {bad1, bad2, bad3, bad4, bad5};
	size_t i;
	char name[128];

	NUL("publisher_init(NULL) -> EINVAL", publisher_init(NULL), RGAPS_EINVAL);
	NUL("subscriber_init(NULL) -> EINVAL", subscriber_init(NULL), RGAPS_EINVAL);
	NUL("rgaps_publisher_init_memory(NULL) -> EINVAL", rgaps_publisher_init_memory(NULL, RGAPS_MEMORY_HOST), RGAPS_EINVAL);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(name, sizeof name, "publisher_init(\"%s\") -> EINVAL", bad[i]);
		NUL(name, publisher_init(bad[i]), RGAPS_EINVAL);
		snprintf(name, sizeof name, "subscriber_init(\"%s\") -> EINVAL", bad[i]);
		NUL(name, subscriber_init(bad[i]), RGAPS_EINVAL);
	}
	printf("   message for a bad name: %s\n", rgaps_last_error_message());
	OK("bad name has a detailed message", strstr(rgaps_last_error_message(), "trailing/") != NULL);
	NUL("memory kind 7 -> EINVAL (publisher)", rgaps_publisher_init_memory("/capi_x", 7), RGAPS_EINVAL);
	NUL("memory kind -1 -> EINVAL (subscriber)", rgaps_subscriber_init_memory("/capi_x", -1), RGAPS_EINVAL);
}

static void check_null_handles(void)
{
	char buf[16] = "x";
	rgaps_message_info_t info;
	uint64_t junk[8] = {0};

	CODE("publisher_push(NULL) -> EBADHANDLE", publisher_push(NULL, sizeof buf, buf), RGAPS_EBADHANDLE);
	CODE("publisher_push(NULL, 0, NULL) -> EBADHANDLE", publisher_push(NULL, 0, NULL), RGAPS_EBADHANDLE);
	CODE("rgaps_publisher_matched(NULL) -> EBADHANDLE", rgaps_publisher_matched(NULL), RGAPS_EBADHANDLE);
	CODE("rgaps_publisher_memory(NULL) -> EBADHANDLE", rgaps_publisher_memory(NULL), RGAPS_EBADHANDLE);
	LAST("publisher_destroy(NULL) -> EBADHANDLE", publisher_destroy(NULL), RGAPS_EBADHANDLE);
	NUL("subscriber_pull(NULL) -> EBADHANDLE", subscriber_pull(NULL), RGAPS_EBADHANDLE);
	CODE("rgaps_subscriber_set_timeout(NULL) -> EBADHANDLE", rgaps_subscriber_set_timeout(NULL, 5), RGAPS_EBADHANDLE);
	CODE("rgaps_subscriber_message_info(NULL) -> EBADHANDLE", rgaps_subscriber_message_info(NULL, &info), RGAPS_EBADHANDLE);
	OK("rgaps_subscriber_message_size(NULL) -> 0", rgaps_subscriber_message_size(NULL) == 0 && rgaps_last_error() == RGAPS_EBADHANDLE);
	CODE("rgaps_subscriber_release(NULL) -> EBADHANDLE", rgaps_subscriber_release(NULL), RGAPS_EBADHANDLE);
	CODE("rgaps_subscriber_matched(NULL) -> EBADHANDLE", rgaps_subscriber_matched(NULL), RGAPS_EBADHANDLE);
	CODE("rgaps_subscriber_memory(NULL) -> EBADHANDLE", rgaps_subscriber_memory(NULL), RGAPS_EBADHANDLE);
	LAST("subscriber_destroy(NULL) -> EBADHANDLE", subscriber_destroy(NULL), RGAPS_EBADHANDLE);
	/* pointers that were never handles: reported, not dereferenced */
	CODE("publisher_push(foreign) -> EBADHANDLE", publisher_push((rgaps_publisher_t *)junk, sizeof buf, buf), RGAPS_EBADHANDLE);
	LAST("publisher_destroy(foreign) -> EBADHANDLE", publisher_destroy((rgaps_publisher_t *)junk), RGAPS_EBADHANDLE);
	NUL("subscriber_pull(foreign) -> EBADHANDLE", subscriber_pull((rgaps_subscriber_t *)(uintptr_t)0xdead0000), RGAPS_EBADHANDLE);
	LAST("subscriber_destroy(foreign) -> EBADHANDLE", subscriber_destroy((rgaps_subscriber_t *)junk), RGAPS_EBADHANDLE);
}

static void check_host_helpers(void)
{
	uint64_t sum = 1;
	uint8_t b[4];
	CODE("rgaps_host_fill_pattern(NULL) -> EINVAL", rgaps_host_fill_pattern(NULL, 4, 1), RGAPS_EINVAL);
	CODE("rgaps_host_checksum(NULL) -> EINVAL", rgaps_host_checksum(NULL, 4, &sum), RGAPS_EINVAL);
	CODE("rgaps_host_checksum(out NULL) -> EINVAL", rgaps_host_checksum(b, 4, NULL), RGAPS_EINVAL);
	CODE("rgaps_host_checksum(size 0) -> OK", rgaps_host_checksum(b, 0, &sum), RGAPS_OK);
	OK("checksum of nothing is 0", sum == 0);
	CODE("rgaps_host_fill_pattern(seed 3)", rgaps_host_fill_pattern(b, 4, 3), RGAPS_OK);
	OK("pattern bytes", b[0] == 3 && b[1] == (uint8_t)(2654435761u ^ 3u) && b[2] == (uint8_t)((2ull * 2654435761u) ^ 3u));
}

/* check_pubsub: a host publisher and subscriber in this process. */
static void check_pubsub(void)
{
	rgaps_publisher_t *pub;
	rgaps_subscriber_t *sub, *sub2;
	rgaps_message_info_t info;
	char hello[] = "hello rgaps";
	char big[64];
	void *p, *none;
	double t0, dt;
	long page = sysconf(_SC_PAGESIZE);
	pthread_t th, ths[4];
	struct blocked b;
	struct pusher pushers[4];
	int i, got, order_ok, last[4];

	pub = rgaps_publisher_init_memory("/capi_check", RGAPS_MEMORY_HOST);
	OK("host publisher created", pub != NULL && rgaps_last_error() == RGAPS_OK);
	sub = rgaps_subscriber_init_memory("capi_check", RGAPS_MEMORY_HOST); /* relative: same topic */
	OK("host subscriber created (relative name)", sub != NULL && rgaps_last_error() == RGAPS_OK);
	if (pub == NULL || sub == NULL)
		return;
	VAL("publisher memory is HOST", rgaps_publisher_memory(pub), RGAPS_MEMORY_HOST);
	VAL("subscriber memory is HOST", rgaps_subscriber_memory(sub), RGAPS_MEMORY_HOST);
	OK("matched 1/1", rgaps_publisher_matched(pub) == 1 && rgaps_subscriber_matched(sub) == 1);
	CODE("push(sub as publisher) -> EBADHANDLE", publisher_push((rgaps_publisher_t *)sub, 4, hello), RGAPS_EBADHANDLE);
	NUL("pull(pub as subscriber) -> EBADHANDLE", subscriber_pull((rgaps_subscriber_t *)pub), RGAPS_EBADHANDLE);

	/* nothing queued */
	CODE("set_timeout 0", rgaps_subscriber_set_timeout(sub, 0), RGAPS_OK);
	NUL("pull, nothing queued, timeout 0 -> ETIMEDOUT", subscriber_pull(sub), RGAPS_ETIMEDOUT);
	OK("message_size without a message -> 0, ENOMSG", rgaps_subscriber_message_size(sub) == 0 && rgaps_last_error() == RGAPS_ENOMSG);
	CODE("message_info without a message -> ENOMSG", rgaps_subscriber_message_info(sub, &info), RGAPS_ENOMSG);
	CODE("release without a message -> ENOMSG", rgaps_subscriber_release(sub), RGAPS_ENOMSG);
	CODE("set_timeout 150 ms", rgaps_subscriber_set_timeout(sub, 150), RGAPS_OK);
	t0 = now_s();
	none = subscriber_pull(sub);
	dt = now_s() - t0;
	NUL("pull, nothing published, 150 ms -> ETIMEDOUT", none, RGAPS_ETIMEDOUT);
	OK("the pull waited about 150 ms", dt >= 0.14 && dt < 10);

	/* bad pushes */
	CODE("push size 0 -> EINVAL", publisher_push(pub, 0, hello), RGAPS_EINVAL);
	CODE("push NULL payload -> EINVAL", publisher_push(pub, 8, NULL), RGAPS_EINVAL);
	CODE("push SIZE_MAX -> ETOOLARGE", publisher_push(pub, SIZE_MAX, hello), RGAPS_ETOOLARGE);
	CODE("push larger than the pool -> ETOOLARGE", publisher_push(pub, (size_t)1 << 30, hello), RGAPS_ETOOLARGE);
	CODE("push from the NULL page -> EFAULT", publisher_push(pub, 16, (void *)(uintptr_t)16), RGAPS_EFAULT);
	{
		void *guard = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		CODE("push from a PROT_NONE page -> EFAULT", publisher_push(pub, 64, guard), RGAPS_EFAULT);
		printf("   message: %s\n", rgaps_last_error_message());
		munmap(guard, (size_t)page);
	}
	CODE("pull after the bad pushes: nothing was published", (rgaps_subscriber_set_timeout(sub, 0), subscriber_pull(sub) == NULL ? rgaps_last_error() : 0), RGAPS_ETIMEDOUT);

	/* one message */
	CODE("push hello", publisher_push(pub, sizeof hello, hello), RGAPS_OK);
	CODE("set_timeout 5 s", rgaps_subscriber_set_timeout(sub, 5000), RGAPS_OK);
	p = subscriber_pull(sub);
	OK("pull hello", p != NULL && rgaps_last_error() == RGAPS_OK && memcmp(p, hello, sizeof hello) == 0);
	OK("message_size", rgaps_subscriber_message_size(sub) == sizeof hello);
	CODE("message_info", rgaps_subscriber_message_info(sub, &info), RGAPS_OK);
	OK("info: size, sequence 1, host memory, timestamps",
	   info.size == sizeof hello && info.sequence == 1 && info.memory == RGAPS_MEMORY_HOST &&
	   info.source_timestamp_ns > 0 && info.received_timestamp_ns >= info.source_timestamp_ns);
	CODE("message_info(info NULL) -> EINVAL", rgaps_subscriber_message_info(sub, NULL), RGAPS_EINVAL);
	CODE("set_timeout 0 again", rgaps_subscriber_set_timeout(sub, 0), RGAPS_OK);
	NUL("next pull gives back hello and finds nothing", subscriber_pull(sub), RGAPS_ETIMEDOUT);
	OK("no message held after a failed pull", rgaps_subscriber_message_size(sub) == 0);

	/* release */
	memset(big, 'b', sizeof big);
	CODE("push big", publisher_push(pub, sizeof big, big), RGAPS_OK);
	OK("pull big", subscriber_pull(sub) != NULL);
	CODE("release", rgaps_subscriber_release(sub), RGAPS_OK);
	CODE("release again -> ENOMSG", rgaps_subscriber_release(sub), RGAPS_ENOMSG);

	/* thread-local error state */
	{
		pthread_t other;
		void *res;
		publisher_push(NULL, 1, big);
		pthread_create(&other, NULL, tls_other, pub);
		pthread_join(other, &res);
		OK("other thread's success", (intptr_t)res == RGAPS_MEMORY_HOST);
		OK("error state is per thread", rgaps_last_error() == RGAPS_EBADHANDLE);
	}

	/* four threads push, one subscriber takes all, in each thread's order */
	CODE("set_timeout 10 s", rgaps_subscriber_set_timeout(sub, 10000), RGAPS_OK);
	for (i = 0; i < 4; i++) {
		pushers[i] = (struct pusher){.pub = pub, .id = i, .n = 200};
		pthread_create(&ths[i], NULL, push_many, &pushers[i]);
	}
	got = 0;
	order_ok = 1;
	for (i = 0; i < 4; i++)
		last[i] = -1;
	while (got < 800) {
		const uint32_t *m = subscriber_pull(sub);
		if (m == NULL)
			break;
		if (m[0] >= 4 || (int)m[1] != last[m[0]] + 1)
			order_ok = 0;
		else
			last[m[0]] = (int)m[1];
		got++;
	}
	for (i = 0; i < 4; i++)
		pthread_join(ths[i], NULL);
	OK("800 messages from 4 threads, each thread's in order", got == 800 && order_ok);
	for (i = 0; i < 4; i++)
		OK("pusher thread had no failures", pushers[i].failed == 0);

	/* destroy while another thread is blocked in pull */
	sub2 = rgaps_subscriber_init_memory("/capi_check_block", RGAPS_MEMORY_HOST);
	OK("second subscriber", sub2 != NULL);
	if (sub2 != NULL) {
		b.sub = sub2;
		b.got = (void *)1;
		b.code = 0;
		pthread_create(&th, NULL, pull_blocked, &b); /* timeout: for ever */
		usleep(300 * 1000);
		t0 = now_s();
		LAST("subscriber_destroy while a pull blocks", subscriber_destroy(sub2), RGAPS_OK);
		dt = now_s() - t0;
		pthread_join(th, NULL);
		OK("the blocked pull returned NULL with ECLOSED", b.got == NULL && b.code == RGAPS_ECLOSED);
		OK("destroy waited less than 2 s", dt < 2);
		NUL("pull after destroy -> EBADHANDLE", subscriber_pull(sub2), RGAPS_EBADHANDLE);
	}

	/* destroy, twice */
	LAST("publisher_destroy", publisher_destroy(pub), RGAPS_OK);
	LAST("publisher_destroy again -> EBADHANDLE", publisher_destroy(pub), RGAPS_EBADHANDLE);
	CODE("push after destroy -> EBADHANDLE", publisher_push(pub, sizeof hello, hello), RGAPS_EBADHANDLE);
	VAL("subscriber sees no publisher", rgaps_subscriber_matched(sub), 0);
	LAST("subscriber_destroy", subscriber_destroy(sub), RGAPS_OK);
	LAST("subscriber_destroy again -> EBADHANDLE", subscriber_destroy(sub), RGAPS_EBADHANDLE);
}

static void check_no_gpu(void)
{
	void *dp = (void *)1;
	uint64_t sum;
	rgaps_publisher_t *pub;
	void *fake = (void *)(uintptr_t)0x100000;

	NUL("nogpu: publisher_init_memory(GPU) -> RGAPS_ENOTSUP", rgaps_publisher_init_memory("/capi_gpu", RGAPS_MEMORY_GPU), RGAPS_ENOTSUP);
	NUL("nogpu: subscriber_init_memory(GPU) -> RGAPS_ENOTSUP", rgaps_subscriber_init_memory("/capi_gpu", RGAPS_MEMORY_GPU), RGAPS_ENOTSUP);
	NUL("nogpu: bad name is still EINVAL", rgaps_publisher_init_memory("bad name", RGAPS_MEMORY_GPU), RGAPS_EINVAL);
	CODE("nogpu: device_alloc -> RGAPS_ENOTSUP", rgaps_device_alloc(64, &dp), RGAPS_ENOTSUP);
	OK("nogpu: device_alloc left the pointer alone", dp == (void *)1);
	CODE("nogpu: device_alloc(size 0) -> EINVAL", rgaps_device_alloc(0, &dp), RGAPS_EINVAL);
	CODE("nogpu: device_alloc(out NULL) -> EINVAL", rgaps_device_alloc(64, NULL), RGAPS_EINVAL);
	CODE("nogpu: device_free -> RGAPS_ENOTSUP", rgaps_device_free(fake), RGAPS_ENOTSUP);
	CODE("nogpu: device_free(NULL) -> EINVAL", rgaps_device_free(NULL), RGAPS_EINVAL);
	CODE("nogpu: device_fill_pattern -> RGAPS_ENOTSUP", rgaps_device_fill_pattern(fake, 64, 1), RGAPS_ENOTSUP);
	CODE("nogpu: device_fill_pattern(NULL) -> EINVAL", rgaps_device_fill_pattern(NULL, 64, 1), RGAPS_EINVAL);
	CODE("nogpu: device_checksum -> RGAPS_ENOTSUP", rgaps_device_checksum(fake, 64, &sum), RGAPS_ENOTSUP);
	CODE("nogpu: device_checksum(out NULL) -> EINVAL", rgaps_device_checksum(fake, 64, NULL), RGAPS_EINVAL);
	pub = rgaps_publisher_init_memory("/capi_auto", RGAPS_MEMORY_AUTO);
	OK("nogpu: AUTO publisher created", pub != NULL);
	if (pub != NULL) {
		VAL("nogpu: AUTO publisher is HOST", rgaps_publisher_memory(pub), RGAPS_MEMORY_HOST);
		publisher_destroy(pub);
	}
}

static void check_gpu(void)
{
	const size_t n = 1 << 20;
	void *dp = NULL;
	uint8_t *host = malloc(n);
	uint64_t want = 0, have = 0;
	rgaps_publisher_t *pub;
	rgaps_subscriber_t *gsub, *hsub;
	rgaps_message_info_t info;
	void *p;

	CODE("gpu: device_alloc", rgaps_device_alloc(n, &dp), RGAPS_OK);
	CODE("gpu: device_fill_pattern", rgaps_device_fill_pattern(dp, n, 7), RGAPS_OK);
	CODE("gpu: device_checksum", rgaps_device_checksum(dp, n, &have), RGAPS_OK);
	rgaps_host_fill_pattern(host, n, 7);
	rgaps_host_checksum(host, n, &want);
	OK("gpu: device checksum equals host checksum", have == want);

	pub = publisher_init("/capi_gpu");
	gsub = rgaps_subscriber_init_memory("/capi_gpu", RGAPS_MEMORY_GPU);
	hsub = rgaps_subscriber_init_memory("/capi_gpu", RGAPS_MEMORY_HOST);
	OK("gpu: AUTO publisher, GPU and host subscribers", pub != NULL && gsub != NULL && hsub != NULL);
	if (pub == NULL || gsub == NULL || hsub == NULL)
		return;
	VAL("gpu: AUTO publisher is GPU", rgaps_publisher_memory(pub), RGAPS_MEMORY_GPU);
	CODE("gpu: push from device memory", publisher_push(pub, n, dp), RGAPS_OK);
	rgaps_subscriber_set_timeout(gsub, 10000);
	rgaps_subscriber_set_timeout(hsub, 10000);
	p = subscriber_pull(gsub);
	OK("gpu: GPU subscriber pulls a device pointer", p != NULL);
	have = 0;
	CODE("gpu: checksum of the pulled device pointer", rgaps_device_checksum(p, n, &have), RGAPS_OK);
	OK("gpu: pulled device payload is the pattern", have == want);
	CODE("gpu: info", rgaps_subscriber_message_info(gsub, &info), RGAPS_OK);
	OK("gpu: info says GPU memory", info.memory == RGAPS_MEMORY_GPU && info.size == n);
	p = subscriber_pull(hsub);
	OK("gpu: host subscriber of the GPU topic gets the bytes", p != NULL && memcmp(p, host, n) == 0);
	CODE("gpu: push from a bad device pointer -> EDEVICE", publisher_push(pub, 64, (void *)(uintptr_t)0x1000), RGAPS_EDEVICE);
	subscriber_destroy(gsub);
	subscriber_destroy(hsub);
	publisher_destroy(pub);
	CODE("gpu: device_free", rgaps_device_free(dp), RGAPS_OK);
	free(host);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "check";
	char topic[] = "/capi_env";

	if (strcmp(mode, "env") == 0 || strcmp(mode, "envok") == 0) {
		rgaps_publisher_t *p = publisher_init(topic);
		printf("publisher_init: %p, %d: %s\n", (void *)p, rgaps_last_error(), rgaps_last_error_message());
		if (strcmp(mode, "envok") == 0) {
			if (p == NULL)
				return 1;
			publisher_destroy(p);
			return 0;
		}
		return p == NULL && rgaps_last_error() == RGAPS_EINVAL ? 0 : 1;
	}

	check_strerror();
	check_bad_names();
	check_null_handles();
	check_host_helpers();
	check_pubsub();
	if (rgaps_gpu_available()) {
		printf("gpu 1\n");
		check_gpu();
	} else {
		printf("gpu 0\n");
		check_no_gpu();
	}
	printf("failures %d\n", failures);
	return failures ? 1 : 0;
}
`

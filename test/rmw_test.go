package test

// The ROS 2 rmw library (rmw/, librmw_rgaps.so) used from C the way rcl
// uses it: the library is built with `go build -buildmode=c-shared`, the
// harness programs of rmw/test (rmw_api.c, rmw_pubsub.c, rmw_proc.c,
// rmw_bench.c; rmw_cpp.cpp with C++ messages, as rclcpp hands them over)
// are compiled with gcc and g++ against the project's own ABI
// declarations (rmw/include) and run as separate processes with
// LD_LIBRARY_PATH pointing at the library. They follow the checklist of
// test_rmw_implementation (RMW_NOTES.md): bad arguments and foreign
// identifiers, allocation failures, round trips, rmw_wait semantics, the
// graph from a second process, services, loans with SIGKILL of the holder.
// They inherit this run's RGAPS_SHM_PREFIX, so TestMain's leak check
// covers what they leave. Domains 60–69 are these tests'. The library is
// built without the race detector (a Go library loaded by a C program
// cannot map ThreadSanitizer's shadow memory; see capi_test.go).

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	rgaps "github.com/rmw-rgaps/rmw_rgaps"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// rmwSymbols are the functions rmw_implementation (Jazzy) resolves in an
// rmw library: every one must be exported.
var rmwSymbols = strings.Fields(`
rmw_borrow_loaned_message rmw_client_request_publisher_get_actual_qos
rmw_client_response_subscription_get_actual_qos rmw_client_set_on_new_response_callback
rmw_compare_gids_equal rmw_context_fini rmw_count_clients rmw_count_publishers rmw_count_services
rmw_count_subscribers rmw_create_client rmw_create_guard_condition rmw_create_node
rmw_create_publisher rmw_create_service rmw_create_subscription rmw_create_wait_set
rmw_deserialize rmw_destroy_client rmw_destroy_guard_condition rmw_destroy_node
rmw_destroy_publisher rmw_destroy_service rmw_destroy_subscription rmw_destroy_wait_set
rmw_event_set_callback rmw_feature_supported rmw_fini_publisher_allocation
rmw_fini_subscription_allocation rmw_get_client_names_and_types_by_node rmw_get_gid_for_client
rmw_get_gid_for_publisher rmw_get_implementation_identifier rmw_get_node_names
rmw_get_node_names_with_enclaves rmw_get_publisher_names_and_types_by_node
rmw_get_publishers_info_by_topic rmw_get_serialization_format rmw_get_serialized_message_size
rmw_get_service_names_and_types rmw_get_service_names_and_types_by_node
rmw_get_subscriber_names_and_types_by_node rmw_get_subscriptions_info_by_topic
rmw_get_topic_names_and_types rmw_init rmw_init_options_copy rmw_init_options_fini
rmw_init_options_init rmw_init_publisher_allocation rmw_init_subscription_allocation
rmw_node_get_graph_guard_condition rmw_publish rmw_publish_loaned_message
rmw_publish_serialized_message rmw_publisher_assert_liveliness
rmw_publisher_count_matched_subscriptions rmw_publisher_event_init rmw_publisher_get_actual_qos
rmw_publisher_get_network_flow_endpoints rmw_publisher_wait_for_all_acked
rmw_qos_profile_check_compatible rmw_return_loaned_message_from_publisher
rmw_return_loaned_message_from_subscription rmw_send_request rmw_send_response rmw_serialize
rmw_serialization_support_init rmw_service_request_subscription_get_actual_qos
rmw_service_response_publisher_get_actual_qos rmw_service_server_is_available
rmw_service_set_on_new_request_callback rmw_set_log_severity rmw_shutdown
rmw_subscription_count_matched_publishers rmw_subscription_event_init
rmw_subscription_get_actual_qos rmw_subscription_get_content_filter
rmw_subscription_get_network_flow_endpoints rmw_subscription_set_content_filter
rmw_subscription_set_on_new_message_callback rmw_take rmw_take_dynamic_message
rmw_take_dynamic_message_with_info rmw_take_event rmw_take_loaned_message
rmw_take_loaned_message_with_info rmw_take_request rmw_take_response rmw_take_sequence
rmw_take_serialized_message rmw_take_serialized_message_with_info rmw_take_with_info
rmw_trigger_guard_condition rmw_wait
rmw_event_type_is_supported rmw_node_assert_liveliness rgaps_rmw_last_error
`)

// rmwKit is what the subtests share: the built library and programs.
type rmwKit struct {
	root, dir, lib, cc string
	progs              map[string]string
}

// rmwBuild builds librmw_rgaps.so and compiles the harness programs, or,
// with RGAPS_RMW_BUILT=<dir>, takes them prebuilt from dir (for machines
// without Go, such as the GPU benchmark hosts).
func rmwBuild(t testing.TB) *rmwKit {
	if dir := os.Getenv("RGAPS_RMW_BUILT"); dir != "" {
		k := &rmwKit{dir: dir, lib: filepath.Join(dir, "librmw_rgaps.so"), progs: map[string]string{}}
		for _, p := range []string{"rmw_api", "rmw_pubsub", "rmw_proc", "rmw_bench", "rmw_signals", "rmw_cpp", "rmw_gpu", "rmw_dds"} {
			k.progs[p] = filepath.Join(dir, p)
		}
		return k
	}
	cc := ""
	for _, c := range []string{"gcc", "cc"} {
		if p, err := exec.LookPath(c); err == nil {
			cc = p
			break
		}
	}
	if cc == "" {
		t.Skip("no C compiler (gcc, cc) on PATH: the rmw library and its harness need one")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("no C++ compiler (g++) on PATH: the rmw library's type support has C++ parts")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	k := &rmwKit{root: root, dir: t.TempDir(), cc: cc, progs: map[string]string{}}
	k.lib = filepath.Join(k.dir, "librmw_rgaps.so")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goTool, "build", "-buildmode=c-shared", "-o", k.lib, "./rmw")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared ./rmw: %v\n%s", err, b)
	}
	for _, p := range []string{"rmw_api", "rmw_pubsub", "rmw_proc", "rmw_bench", "rmw_signals", "rmw_gpu", "rmw_dds"} {
		out := filepath.Join(k.dir, p)
		// -rdynamic: rmw_api defines rcutils_set_error_state, which the
		// library binds weakly, as in a ROS process.
		rmwCC(t, k, "-rdynamic", "-o", out, filepath.Join(root, "rmw", "test", p+".c"), "-L"+k.dir, "-lrmw_rgaps", "-lpthread")
		k.progs[p] = out
	}
	cxx, _ := exec.LookPath("g++")
	out := filepath.Join(k.dir, "rmw_cpp")
	if b, err := exec.Command(cxx, "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror",
		"-I"+filepath.Join(root, "rmw", "include"), "-I"+filepath.Join(root, "rmw"),
		"-I"+filepath.Join(root, "typesupport", "introspection"), "-I"+filepath.Join(root, "include"),
		"-o", out, filepath.Join(root, "rmw", "test", "rmw_cpp.cpp"), "-L"+k.dir, "-lrmw_rgaps").CombinedOutput(); err != nil {
		t.Fatalf("g++ rmw_cpp.cpp: %v\n%s", err, b)
	}
	k.progs["rmw_cpp"] = out
	return k
}

// rmwCC compiles with the project's declarations, warnings as errors.
func rmwCC(t testing.TB, k *rmwKit, args ...string) {
	t.Helper()
	base := []string{"-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror",
		"-I" + filepath.Join(k.root, "rmw", "include"), "-I" + filepath.Join(k.root, "rmw"),
		"-I" + filepath.Join(k.root, "typesupport", "introspection"), "-I" + filepath.Join(k.root, "include")}
	if b, err := exec.Command(k.cc, append(base, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", k.cc, strings.Join(args, " "), err, b)
	}
}

// rmwEnv is the environment of a harness program on domain dom.
func rmwEnv(k *rmwKit, dom int) []string {
	var env []string
	for _, e := range os.Environ() {
		switch strings.SplitN(e, "=", 2)[0] {
		case "ROS_DOMAIN_ID", "LD_LIBRARY_PATH", "RGAPS_POOL_SIZE", "ROS_DISABLE_LOANED_MESSAGES":
			continue
		}
		env = append(env, e)
	}
	return append(env, fmt.Sprintf("ROS_DOMAIN_ID=%d", dom), "LD_LIBRARY_PATH="+k.dir, "RGAPS_POOL_SIZE=16M")
}

// rmwStart starts a harness program with a pipe on its stdin: roles that
// serve until told stop when it closes.
func rmwStart(t *testing.T, env []string, bin string, args ...string) (*capiProc, io.WriteCloser) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p := startProc(t, env, r, bin, args...)
	r.Close()
	t.Cleanup(func() {
		w.Close()
		select {
		case <-p.done:
		case <-time.After(capiTimeout):
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p, w
}

// rmwPassed runs a harness program to its end and checks its verdicts.
func rmwPassed(t *testing.T, p *capiProc) {
	t.Helper()
	code := p.wait(t)
	out := p.stdout()
	if code != 0 || !strings.Contains(out, "ALL PASS") || strings.Contains(out, "FAIL") {
		t.Fatalf("%s: exit %d\n%s", p.name, code, p)
	}
	t.Logf("%s:\n%s", p.name, out)
}

func TestRmw(t *testing.T) {
	k := rmwBuild(t)
	t.Run("Exports", func(t *testing.T) { rmwExports(t, k) })
	t.Run("ABIDeclarations", func(t *testing.T) { rmwABI(t, k) })
	t.Run("ArgumentsAndAllocationFailures", func(t *testing.T) {
		p, _ := rmwStart(t, rmwEnv(k, 60), k.progs["rmw_api"])
		rmwPassed(t, p)
	})
	t.Run("OneProcess", func(t *testing.T) {
		p, _ := rmwStart(t, rmwEnv(k, 61), k.progs["rmw_pubsub"])
		rmwPassed(t, p)
	})
	t.Run("CppMessages", func(t *testing.T) {
		p, _ := rmwStart(t, rmwEnv(k, 69), k.progs["rmw_cpp"])
		rmwPassed(t, p)
	})
	t.Run("LoansDisabledByEnvironment", func(t *testing.T) { rmwLoansDisabled(t, k) })
	t.Run("ErrorStateWhenLoadedLocally", func(t *testing.T) { rmwLocalLoad(t, k) })
	t.Run("GraphAndServiceBetweenProcesses", func(t *testing.T) {
		env := rmwEnv(k, 62)
		peer, stdin := rmwStart(t, env, k.progs["rmw_proc"], "peer")
		defer stdin.Close()
		peer.expect(t, "READY")
		rmwPoolSizes(t, 62, map[string]uint64{
			"/peer_ns/chatter":                16 << 20, // RGAPS_POOL_SIZE
			"/_rgaps_rq/peer_ns/add_two_ints": 4 << 20,  // ROS's own topics: small pools
			"/_rgaps_rr/peer_ns/add_two_ints": 4 << 20,
		})
		obs, _ := rmwStart(t, env, k.progs["rmw_proc"], "observer")
		rmwPassed(t, obs)
		rmwPassed(t, peer)
	})
	t.Run("LoanHolderKilled", func(t *testing.T) { rmwLoanKill(t, k) })
	t.Run("SameBytesAsGoPrograms", func(t *testing.T) { rmwStringInterop(t, k) })
	t.Run("CLIAndRmwNode", func(t *testing.T) { rmwCLIInterop(t, k) })
	t.Run("CLIAndRmwNodePlainType", func(t *testing.T) { rmwCLIPlainInterop(t, k) })
	t.Run("RaceDetector", func(t *testing.T) { rmwRace(t, k) })
	t.Run("LivelinessOfKilledPublisher", func(t *testing.T) {
		env := rmwEnv(k, 66)
		pub, _ := rmwStart(t, env, k.progs["rmw_proc"], "live_pub")
		pub.expect(t, "READY")
		watch, _ := rmwStart(t, env, k.progs["rmw_proc"], "live_watch")
		watch.expect(t, "MATCHED")
		if err := pub.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-pub.done
		rmwPassed(t, watch)
	})
}

// rmwLocalLoad loads rcutils (a stand-in) and the library RTLD_LOCAL, as a
// Python process running rclpy does, and checks that an rmw error reaches
// rcutils' error state.
func rmwLocalLoad(t *testing.T, k *rmwKit) {
	if k.root == "" {
		t.Skip("prebuilt library (RGAPS_RMW_BUILT): no compiler here")
	}
	dir := t.TempDir()
	rmwCC(t, k, "-shared", "-fPIC", "-Wl,-soname,librcutils.so", "-o", filepath.Join(dir, "librcutils.so"),
		filepath.Join(k.root, "rmw", "test", "fake_rcutils.c"))
	prog := filepath.Join(dir, "rmw_local_load")
	rmwCC(t, k, "-o", prog, filepath.Join(k.root, "rmw", "test", "rmw_local_load.c"))
	env := append(rmwEnv(k, 60), "LD_LIBRARY_PATH="+dir+":"+k.dir)
	p, _ := rmwStart(t, env, prog)
	rmwPassed(t, p)
}

// rmwCDRString is std_msgs/msg/String as ROS 2 puts it on the wire (and
// the rgaps CLI reads and writes it): encapsulation 00 01 00 00, the
// length with the NUL, the bytes, the NUL.
func rmwCDRString(s string) []byte {
	b := []byte{0, 1, 0, 0, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[4:], uint32(len(s)+1))
	return append(append(b, s...), 0)
}

// rmwRace runs the one-process harness again, linked with a race-enabled
// c-archive of the library: the Go half's concurrency (wait sets, callback
// goroutines, event counters) under the race detector.
func rmwRace(t *testing.T, k *rmwKit) {
	if !capiRaceEnabled() {
		t.Skip("the race detector is off (go test -race turns this on)")
	}
	if k.root == "" {
		t.Skip("prebuilt library (RGAPS_RMW_BUILT): nothing to rebuild with -race")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	archive := filepath.Join(t.TempDir(), "librmw_rgaps.a")
	cmd := exec.Command(goTool, "build", "-race", "-buildmode=c-archive", "-o", archive, "./rmw")
	cmd.Dir = k.root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -race -buildmode=c-archive ./rmw: %v\n%s", err, b)
	}
	bin := filepath.Join(filepath.Dir(archive), "rmw_pubsub_race")
	rmwCC(t, k, "-no-pie", "-o", bin, filepath.Join(k.root, "rmw", "test", "rmw_pubsub.c"), archive, "-lpthread", "-ldl", "-lm", "-lstdc++")
	p, _ := rmwStart(t, append(rmwEnv(k, 68), "GORACE=halt_on_error=0 atexit_sleep_ms=0"), bin)
	rmwPassed(t, p) // a "DATA RACE" report fails it
}

// rmwStringInterop: a Go program (the native API, as the rgaps CLI uses
// it) and an rmw node exchange std_msgs/msg/String both ways: the rmw
// library carries non-plain messages as plain CDR.
func rmwStringInterop(t *testing.T, k *rmwKit) {
	const dom = 67
	d := uint32(dom)
	c, err := rgaps.NewContext(rgaps.Options{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n, err := c.NewNode("go_side", "/")
	if err != nil {
		t.Fatal(err)
	}
	pub, err := n.NewPublisher("/cli_chatter", "std_msgs/msg/String", qos.Default())
	if err != nil {
		t.Fatal(err)
	}
	sub, err := n.NewSubscription("/cli_reply", "std_msgs/msg/String", qos.Default())
	if err != nil {
		t.Fatal(err)
	}
	echo, _ := rmwStart(t, rmwEnv(k, dom), k.progs["rmw_proc"], "string_echo")
	echo.expect(t, "READY")
	testutil.Eventually(t, 10*time.Second, "the rmw subscription matched", func() bool { return pub.Matched() > 0 })
	if err := pub.Publish(rmwCDRString("hello rmw")); err != nil {
		t.Fatal(err)
	}
	echo.expect(t, "GOT hello rmw")
	smp, err := sub.TakeWait(10 * time.Second)
	if err != nil {
		t.Fatalf("no reply from the rmw node: %v\n%s", err, echo)
	}
	if got, want := smp.Bytes(), rmwCDRString("re: hello rmw"); !bytes.Equal(got, want) {
		t.Errorf("reply bytes %x, want %x", got, want)
	}
	smp.Return()
	rmwPassed(t, echo)
}

// rmwCLIInterop: `rgaps topic pub` (the Go codec, typesupport/schema)
// sends a std_msgs/msg/String from ros2's flow syntax to an rmw node (the C
// walkers, typesupport/introspection), whose reply `rgaps topic echo`
// prints as ros2 does.
func rmwCLIInterop(t *testing.T, k *rmwKit) {
	const dom = "70"
	bin := buildCLI(t, t.TempDir())
	rmwNode, _ := rmwStart(t, rmwEnv(k, 70), k.progs["rmw_proc"], "string_echo")
	rmwNode.expect(t, "READY")
	echo := startCLI(t, bin, "topic", "echo", "/cli_reply", "std_msgs/msg/String", "-n", "1", "-domain", dom)
	pub := startCLI(t, bin, "topic", "pub", "/cli_chatter", "std_msgs/msg/String", "{data: 'hello from the CLI, quoted'}", "-times", "1", "-wait", "60", "-domain", dom)
	rmwNode.expect(t, "GOT hello from the CLI, quoted")
	if code := echo.wait(t); code != 0 {
		t.Fatalf("echo exited %d\n%s", code, echo)
	}
	if got, want := echo.stdout.String(), "data: 're: hello from the CLI, quoted'\n---\n"; got != want {
		t.Errorf("echo of the rmw node's reply: %q, want %q", got, want)
	}
	if code := pub.wait(t); code != 0 {
		t.Errorf("pub exited %d\n%s", code, pub)
	}
	rmwPassed(t, rmwNode)
}

// rmwCLIPlainInterop: the same with a plain type (rgaps_test/msg/Plain of
// the harness, its .msg given to the CLI through RGAPS_INTERFACE_PATH),
// which rmw nodes carry in the plain layout ([4 reserved][CDR header][body],
// docs/ARCHITECTURE.md §3.10): `rgaps topic pub` reaches the rmw node's
// rmw_take with its values, and `rgaps topic echo` prints the node's
// replies, one published by copy and one as a loan.
func rmwCLIPlainInterop(t *testing.T, k *rmwKit) {
	const dom = "71"
	bin := buildCLI(t, t.TempDir())
	defs := t.TempDir()
	writeFile(t, filepath.Join(defs, "rgaps_test", "msg", "Plain.msg"), "int64 stamp\nfloat64 x\nuint32 seq\n")
	env := []string{"RGAPS_INTERFACE_PATH=" + defs, "AMENT_PREFIX_PATH="}
	rmwNode, _ := rmwStart(t, rmwEnv(k, 71), k.progs["rmw_proc"], "plain_echo", "2") // two echoes
	rmwNode.expect(t, "READY")
	echo := startCLIEnv(t, bin, env, "topic", "echo", "/cli_plain_out", "rgaps_test/msg/Plain", "-n", "2", "-domain", dom)
	raw := startCLIEnv(t, bin, env, "topic", "echo", "/cli_plain_out", "rgaps_test/msg/Plain", "-raw", "-n", "2", "-domain", dom)
	pub := startCLIEnv(t, bin, env, "topic", "pub", "-times", "1", "-wait", "60", "-domain", dom,
		"--", "/cli_plain_in", "rgaps_test/msg/Plain", "{stamp: -1234567890123, x: 2.5, seq: 7}")
	rmwNode.expect(t, "GOT -1234567890123 2.5 7")
	if code := echo.wait(t); code != 0 {
		t.Fatalf("echo exited %d\n%s\n%s", code, echo, rmwNode)
	}
	want := "stamp: -1234567890122\nx: 5.0\nseq: 8\n---\nstamp: -1234567890121\nx: 7.5\nseq: 9\n---\n"
	if got := echo.stdout.String(); got != want {
		t.Errorf("echo of the rmw node's replies:\n%s\nwant\n%s\n%s", got, want, echo)
	}
	if e := echo.err.String(); e != "" {
		t.Errorf("echo reported on stderr:\n%s", e)
	}
	// -raw shows the payloads as they are: 4 reserved zero bytes, the CDR
	// header, the 20-byte body; the loan (the second) carries the whole
	// 24-byte struct, its trailing padding after the body
	if code := raw.wait(t); code != 0 {
		t.Fatalf("echo -raw exited %d\n%s", code, raw)
	}
	if got, want := raw.stdout.String(), regexp.MustCompile(`^seq=1 size=28 bytes first=0000000000010000\S+\nseq=2 size=32 bytes first=0000000000010000\S+\n$`); !want.MatchString(got) {
		t.Errorf("echo -raw printed\n%s\nwant plain payloads of 28 and 32 bytes", got)
	}
	if code := pub.wait(t); code != 0 {
		t.Errorf("pub exited %d\n%s", code, pub)
	}
	rmwPassed(t, rmwNode)
}

// rmwPoolSizes checks the pool sizes of topics (seen through the Go API).
func rmwPoolSizes(t *testing.T, dom uint32, want map[string]uint64) {
	t.Helper()
	c, err := rgaps.NewContext(rgaps.Options{Domain: &dom})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ts, err := c.Topics()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, ti := range ts {
		got[ti.Name] = ti.PoolSize
	}
	for name, size := range want {
		if got[name] != size {
			t.Errorf("topic %s: pool of %d bytes, want %d (topics: %v)", name, got[name], size, got)
		}
	}
}

// rmwExports checks that every rmw function is exported and that the
// library is never unloaded.
func rmwExports(t *testing.T, k *rmwKit) {
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
	for _, name := range rmwSymbols {
		if !have[name] {
			t.Errorf("librmw_rgaps.so does not export %s", name)
		}
	}
	if n := len(rmwSymbols); n != 97 {
		t.Errorf("the list names %d functions, want 94 of rmw_implementation + 3", n)
	}
	for _, private := range []string{"rgaps_set_error", "rgaps_alloc", "rgaps_strndup", "rgaps_call_event_callback"} {
		if have[private] {
			t.Errorf("librmw_rgaps.so exports the private %s", private)
		}
	}
	flags, err := f.DynValue(elf.DT_FLAGS_1)
	if err != nil || len(flags) == 0 || flags[0]&uint64(elf.DF_1_NODELETE) == 0 {
		t.Errorf("librmw_rgaps.so lacks DF_1_NODELETE (DT_FLAGS_1 %v, %v)", flags, err)
	}
}

// rmwABI compiles the declarations in every mode the library supports
// (their static assertions are the ABI contract), from C and C++, and
// checks that a wrong size fails the build.
func rmwABI(t *testing.T, k *rmwKit) {
	if k.cc == "" {
		t.Skip("prebuilt library (RGAPS_RMW_BUILT): no compiler here")
	}
	src := filepath.Join(k.dir, "abi.c")
	capiWrite(t, src, "#include \"rgaps_rmw_abi.h\"\n#include \"rmw_impl.h\"\nint main(void) { return 0; }\n")
	rmwCC(t, k, "-o", filepath.Join(k.dir, "abi"), src)
	rmwCC(t, k, "-std=c11", "-pedantic", "-o", filepath.Join(k.dir, "abi_c11"), src)
	rmwCC(t, k, "-DRGAPS_ROS_KILTED", "-o", filepath.Join(k.dir, "abi_kilted"), src)
	if cxx, err := exec.LookPath("g++"); err == nil {
		cpp := filepath.Join(k.dir, "abi.cpp")
		capiWrite(t, cpp, "#include \"rgaps_rmw_abi.h\"\nint main() { return sizeof(rmw_context_t) == 200 ? 0 : 1; }\n")
		if b, err := exec.Command(cxx, "-std=c++17", "-Wall", "-Werror", "-I"+filepath.Join(k.root, "rmw", "include"), "-o", filepath.Join(k.dir, "abi_cpp"), cpp).CombinedOutput(); err != nil {
			t.Errorf("g++: %v\n%s", err, b)
		}
	}
	// The assertions bite: a header whose rmw_init_options_t lost a member
	// (Kilted's layout) must not compile as Jazzy's context size.
	bad := filepath.Join(k.dir, "abi_bad.c")
	capiWrite(t, bad, "#define RGAPS_ROS_KILTED\n#include \"rgaps_rmw_abi.h\"\n_Static_assert(sizeof(rmw_context_t) == 200, \"jazzy\");\nint main(void) { return 0; }\n")
	if err := exec.Command(k.cc, "-std=gnu11", "-I"+filepath.Join(k.root, "rmw", "include"), "-o", filepath.Join(k.dir, "abi_bad"), bad).Run(); err == nil {
		t.Error("a Kilted-layout context passed Jazzy's size assertion")
	}
}

// rmwLoansDisabled: ROS_DISABLE_LOANED_MESSAGES=1 turns loans off, as in
// the other rmw implementations.
func rmwLoansDisabled(t *testing.T, k *rmwKit) {
	if k.cc == "" {
		t.Skip("prebuilt library (RGAPS_RMW_BUILT): no compiler here")
	}
	src := filepath.Join(k.dir, "noloan.c")
	capiWrite(t, src, `#include "rmw_harness.h"
int main(void)
{
	rmw_context_t c;
	rmw_init_options_t o;
	h_init(&c, &o, h_allocator());
	rmw_node_t *n = rmw_create_node(&c, "noloan", "/");
	rmw_publisher_options_t po = {NULL, RMW_UNIQUE_NETWORK_FLOW_ENDPOINTS_NOT_REQUIRED};
	rmw_publisher_t *p = rmw_create_publisher(n, &Plain_ts, "/noloan", &h_qos_default, &po);
	MUST(n && p);
	CHECK(!p->can_loan_messages);
	void *m = NULL;
	CHECK_ERR(rmw_borrow_loaned_message(p, &Plain_ts, &m), RMW_RET_UNSUPPORTED);
	CHECK(m == NULL);
	CHECK_RC(rmw_destroy_publisher(n, p), RMW_RET_OK);
	CHECK_RC(rmw_destroy_node(n), RMW_RET_OK);
	h_fini(&c, &o);
	h_pass("loans_disabled");
	return h_done();
}
`)
	prog := filepath.Join(k.dir, "noloan")
	rmwCC(t, k, "-I"+filepath.Join(k.root, "rmw", "test"), "-o", prog, src, "-L"+k.dir, "-lrmw_rgaps")
	p, _ := rmwStart(t, append(rmwEnv(k, 63), "ROS_DISABLE_LOANED_MESSAGES=1"), prog)
	rmwPassed(t, p)
}

// rmwLoanKill: a subscriber process holding a taken loan is killed with
// SIGKILL; the sample is reclaimed (the topic's pool is whole again) and
// the publisher goes on.
func rmwLoanKill(t *testing.T, k *rmwKit) {
	const dom = 64
	env := rmwEnv(k, dom)
	pub, stdin := rmwStart(t, env, k.progs["rmw_proc"], "loan_pub")
	defer stdin.Close()
	pub.expect(t, "READY")
	hold, _ := rmwStart(t, env, k.progs["rmw_proc"], "loan_hold")
	pub.expect(t, "PUBLISHED")
	hold.expect(t, "HOLDING")

	d := uint32(dom)
	c, err := rgaps.NewContext(rgaps.Options{Domain: &d})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pool := func() (size, free uint64, ok bool) {
		ts, err := c.Topics()
		if err != nil {
			t.Fatal(err)
		}
		for _, ti := range ts {
			if ti.Name == "/loans" {
				return ti.PoolSize, ti.PoolFree, true
			}
		}
		return 0, 0, false
	}
	size, free, ok := pool()
	if !ok || free >= size {
		t.Fatalf("while the loan is held: topic found %v, pool %d free of %d (want less than all)", ok, free, size)
	}
	if err := hold.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-hold.done
	testutil.Eventually(t, 10*time.Second, "the killed holder's loan reclaimed", func() bool {
		size, free, ok := pool()
		return ok && free == size
	})
	stdin.Close()
	rmwPassed(t, pub)
}

// BenchmarkRmwLatency measures publish → take through the rmw layer (a C
// program calling librmw_rgaps.so: serialisation into the pool and out of
// it, and the loan path) and through the Go API directly (Publish of a byte
// slice and Take; Loan and Take), for 64 B and 4 MB messages, in the same
// run, and reports their ratios (rmw / Go; 1.0 means no overhead).
//
//	go test -run '^$' -bench RmwLatency -benchtime 2000x ./test/
func BenchmarkRmwLatency(b *testing.B) {
	k := rmwBuild(b)
	for _, size := range []int{64, 4 << 20} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			iters := b.N
			if size > 1<<20 && iters > 500 {
				iters = 500
			}
			env := rmwEnv(k, 65)
			for i, e := range env {
				if strings.HasPrefix(e, "RGAPS_POOL_SIZE=") {
					env[i] = "RGAPS_POOL_SIZE=64M"
				}
			}
			cmd := exec.Command(k.progs["rmw_bench"], strconv.Itoa(size), strconv.Itoa(iters))
			cmd.Env = env
			out, err := cmd.CombinedOutput()
			if err != nil {
				b.Fatalf("rmw_bench: %v\n%s", err, out)
			}
			rmwCopy, rmwLoan := rmwBenchValue(b, out, "rmw_copy_ns"), rmwBenchValue(b, out, "rmw_loan_ns")
			goCopy, goLoan := goLatency(b, size, iters)
			b.ReportMetric(rmwCopy, "rmw-copy-ns/msg")
			b.ReportMetric(goCopy, "go-copy-ns/msg")
			b.ReportMetric(rmwCopy/goCopy, "ratio-copy")
			b.ReportMetric(rmwLoan, "rmw-loan-ns/msg")
			b.ReportMetric(goLoan, "go-loan-ns/msg")
			b.ReportMetric(rmwLoan/goLoan, "ratio-loan")
			fmt.Printf("rmw latency %d B, %d messages: rmw_publish+rmw_take %.0f ns, Go Publish+Take %.0f ns, ratio %.2f; loans rmw %.0f ns, Go %.0f ns, ratio %.2f\n",
				size, iters, rmwCopy, goCopy, rmwCopy/goCopy, rmwLoan, goLoan, rmwLoan/goLoan)
		})
	}
}

var rmwBenchLine = regexp.MustCompile(`(?m)^(\w+) ([0-9.]+)$`)

func rmwBenchValue(b *testing.B, out []byte, key string) float64 {
	for _, m := range rmwBenchLine.FindAllSubmatch(out, -1) {
		if string(m[1]) == key {
			v, _ := strconv.ParseFloat(string(m[2]), 64)
			return v
		}
	}
	b.Fatalf("rmw_bench printed no %s:\n%s", key, out)
	return 0
}

// goLatency is the Go API's publish → take, the same loop as rmw_bench:
// one publisher and one subscription in one process, each message taken
// right after it is published and its first 8 bytes checked.
func goLatency(b *testing.B, size, iters int) (copyNs, loanNs float64) {
	d := uint32(65)
	c, err := rgaps.NewContext(rgaps.Options{Domain: &d, Engine: zerocopy.Config{PoolSize: 64 << 20}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	n, err := c.NewNode("go_bench", "/")
	if err != nil {
		b.Fatal(err)
	}
	topic := fmt.Sprintf("/go_bench_%d", size)
	q := qos.Default()
	pub, err := n.NewPublisher(topic, "rgaps/msg/Bytes", q)
	if err != nil {
		b.Fatal(err)
	}
	sub, err := n.NewSubscription(topic, "rgaps/msg/Bytes", q)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, size)
	take := func(i int) {
		s, err := sub.Take()
		if err != nil {
			b.Fatal(err)
		}
		if s.Bytes()[0] != byte(i) {
			b.Fatal("wrong message")
		}
		s.Return()
	}
	warm := min(iters, 100)
	run := func(loan bool) float64 {
		var start time.Time
		for i := -warm; i < iters; i++ {
			if i == 0 {
				start = time.Now()
			}
			if loan {
				l, err := pub.Loan(size)
				if err != nil {
					b.Fatal(err)
				}
				l.Bytes()[0] = byte(i)
				if err := l.Publish(); err != nil {
					b.Fatal(err)
				}
			} else {
				buf[0] = byte(i)
				if err := pub.Publish(buf); err != nil {
					b.Fatal(err)
				}
			}
			take(i)
		}
		return float64(time.Since(start).Nanoseconds()) / float64(iters)
	}
	copyNs = run(false)
	loanNs = run(true)
	return copyNs, loanNs
}

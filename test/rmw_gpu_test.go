package test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/daemonproc"
	"github.com/rmw-rgaps/rmw_rgaps/internal/netns"
	"github.com/rmw-rgaps/rmw_rgaps/internal/testutil"
)

// TestRmwGPU drives the GPU-loan entry points of librmw_rgaps.so
// (include/rgaps/gpu.h) the way rgaps/gpu.hpp does from rclcpp, with the C
// harness rmw/test/rmw_gpu.c: device loans published to ordinary, device
// and serialized subscriptions in one process and across processes, the
// block of a SIGKILLed holder coming back, pool exhaustion per QoS, and
// two emulated hosts. Without a GPU the loans and views are host memory
// (the fallback a laptop and CI run); on a GPU machine the same test checks
// device memory.
func TestRmwGPU(t *testing.T) {
	k := rmwBuild(t)
	t.Run("OneProcess", func(t *testing.T) {
		p, _ := rmwStart(t, rmwEnv(k, 70), k.progs["rmw_gpu"], "local")
		rmwPassed(t, p)
	})
	t.Run("Processes", func(t *testing.T) {
		env := rmwEnv(k, 71)
		var subs []*capiProc
		for _, role := range []string{"cpu_sub", "cpu_sub", "dev_sub", "dev_sub", "dev_sub"} {
			s, _ := rmwStart(t, env, k.progs["rmw_gpu"], role, "20", "3000000")
			s.expect(t, "READY")
			subs = append(subs, s)
		}
		pub, stdin := rmwStart(t, env, k.progs["rmw_gpu"], "pub", "20", "5", "3000000")
		for _, s := range subs {
			rmwPassed(t, s)
			if !strings.Contains(s.stdout(), "GOT 20 ") {
				t.Errorf("%s: %s", s.name, s.stdout())
			}
		}
		stdin.Close()
		rmwPassed(t, pub)
	})
	t.Run("HolderKilled", func(t *testing.T) {
		env := rmwEnv(k, 72)
		holder, _ := rmwStart(t, env, k.progs["rmw_gpu"], "holder", "12000000")
		holder.expect(t, "READY")
		refill, stdin := rmwStart(t, env, k.progs["rmw_gpu"], "refill", "12000000")
		refill.expect(t, "SENT")
		holder.expect(t, "HELD")
		if err := holder.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-holder.done
		fmt.Fprintln(stdin, "killed")
		rmwPassed(t, refill)
	})
	t.Run("TwoHosts", func(t *testing.T) { rmwGPUTwoHosts(t, k) })
}

// rmwGPUTwoHosts: a publisher of device loans on host a, an ordinary and a
// device subscriber on host b, daemons bridging them over libfabric tcp
// between two network namespaces; where this process cannot make
// namespaces (not root, or no nsenter(1)), between two daemons on
// loopback with their own shared-memory prefixes, which is all a host is to
// the engine.
func rmwGPUTwoHosts(t *testing.T, k *rmwKit) {
	ns, addr, port := [2]string{}, [2]string{"127.0.0.1", "127.0.0.1"}, [2]string{"7791", "7792"}
	if why := netns.Unavailable(); why == "" {
		hosts := testutil.NewHosts(t)
		ns, addr, port = hosts.NS, hosts.Addr, [2]string{"7790", "7790"}
	} else {
		t.Logf("two daemons on loopback: %s for network namespaces", why)
	}
	wrap := func(i int, argv ...string) []string {
		return netns.Wrap(ns[i], argv...)
	}
	dir := t.TempDir()
	secret, err := daemonproc.WriteSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	const dom = 73
	var env [2][]string
	for i := range env {
		env[i] = append(rmwEnv(k, dom), "RGAPS_SHM_PREFIX="+testutil.Prefix()+"g"+strconv.Itoa(i),
			"RGAPS_DAEMON="+os.Args[0], "RGAPS_DAEMON_IDLE=0")
	}
	for _, i := range []int{1, 0} {
		args := wrap(i, os.Args[0], "daemon", "-domain", strconv.Itoa(dom),
			"-listen", net.JoinHostPort(addr[i], port[i]), "-secret-file", secret,
			"-host-id", "gpu-host-"+strconv.Itoa(i), "-provider", "fabric:tcp")
		if i == 0 {
			args = append(args, "-peers", net.JoinHostPort(addr[1], port[1]))
		}
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = env[i]
		d, err := daemonproc.Start(fmt.Sprintf("the daemon of host %d", i), cmd, filepath.Join(dir, fmt.Sprintf("daemon%d.log", i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("daemon %d:\n%s", i, d.Tail())
			}
			d.Stop(10 * time.Second)
			removeSegments(testutil.Prefix() + "g" + strconv.Itoa(i))
		})
		if err := d.WaitLog("bridge started", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	in := func(i int, args ...string) (*capiProc, func()) {
		argv := wrap(i, append([]string{k.progs["rmw_gpu"]}, args...)...)
		p, stdin := rmwStart(t, env[i], argv[0], argv[1:]...)
		return p, func() { stdin.Close() }
	}
	cpu, _ := in(1, "cpu_sub", "10", "4000000")
	cpu.expect(t, "READY")
	dev, _ := in(1, "dev_sub", "10", "4000000")
	dev.expect(t, "READY")
	pub, done := in(0, "pub", "10", "2", "4000000") // b's two subscriptions, once a's bridge carries the topic
	for _, s := range []*capiProc{cpu, dev} {
		rmwPassed(t, s)
		if !strings.Contains(s.stdout(), "GOT 10 ") {
			t.Errorf("%s: %s", s.name, s.stdout())
		}
	}
	done()
	rmwPassed(t, pub)
}

// removeSegments removes what an emulated host left in /dev/shm once its
// processes are gone (its graph segment, its topics).
func removeSegments(prefix string) {
	ents, _ := os.ReadDir("/dev/shm")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix+"_") {
			os.Remove(filepath.Join("/dev/shm", e.Name()))
		}
	}
}

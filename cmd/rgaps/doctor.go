package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	bridgestatus "github.com/rmw-rgaps/rmw_rgaps/bridge/status"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/gpuinfo"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

func init() {
	register("doctor", "what this machine offers rmw_rgaps (GPU, topology, shared memory, daemon), what is missing and how to fix it", runDoctor)
}

func runDoctor(args []string) error {
	fs := flag.NewFlagSet("doctor", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	doctor(os.Stdout)
	return nil
}

// doctor writes the report. It never fails: every finding is a line, and
// each problem says how to fix it.
func doctor(w io.Writer) {
	var fixes []string
	fix := func(format string, a ...any) { fixes = append(fixes, fmt.Sprintf(format, a...)) }

	var uts unix.Utsname
	unix.Uname(&uts)
	kernel := unix.ByteSliceToString(uts.Release[:])
	fmt.Fprintf(w, "host\n  kernel           %s\n", kernel)
	if !kernelAtLeast(kernel, 5, 16) {
		fmt.Fprintln(w, "  futex_waitv      missing: wait sets poll their extra conditions every 2 ms")
		fix("upgrade to Linux 5.16 or newer for one-syscall waits on many subscriptions")
	} else {
		fmt.Fprintln(w, "  futex_waitv      yes (one wait covers many subscriptions)")
	}
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil {
		fmt.Fprintf(w, "  /dev/shm         unusable: %v\n", err)
		fix("mount a tmpfs on /dev/shm: mount -t tmpfs -o size=8g tmpfs /dev/shm")
	} else {
		total, free := st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
		fmt.Fprintf(w, "  /dev/shm         %s free of %s\n", human(free), human(total))
		// Topics commit what they use, so a small /dev/shm runs many small
		// topics; only a topic whose pool fills up to its cap needs that much.
		if cfg, err := (zerocopy.Config{}).FromEnv(); err == nil && free < cfg.PoolSize {
			fix("/dev/shm cannot hold one topic pool filled to its cap of %s (small topics are fine; a full one fails with \"no space left in /dev/shm\"): mount -o remount,size=<larger> /dev/shm, or lower RGAPS_POOL_SIZE", human(cfg.PoolSize))
		}
	}

	fmt.Fprintln(w, "GPU (NVML)")
	r, err := gpuinfo.Read()
	switch {
	case err != nil:
		fmt.Fprintf(w, "  not available: %v\n", err)
	case len(r.GPUs) == 0:
		fmt.Fprintln(w, "  driver loaded, no GPU")
	default:
		fmt.Fprintf(w, "  driver           %s (CUDA %d.%d)\n", r.DriverVersion, r.CUDAVersion/1000, r.CUDAVersion%1000/10)
		for _, g := range r.GPUs {
			numa := "none"
			if g.NUMANode >= 0 {
				numa = fmt.Sprint(g.NUMANode)
			}
			fmt.Fprintf(w, "  GPU %d            %s, %s (%s free), PCI %s, NUMA node %s\n", g.Index, g.Name, human(g.MemTotal), human(g.MemFree), g.PCIBusID, numa)
		}
	}

	fmt.Fprintln(w, "GPU (CUDA driver API)")
	dev, err := cuda.Open(0)
	if err != nil {
		fmt.Fprintf(w, "  not available: %v\n", err)
		fmt.Fprintln(w, "  → host pools only: everything works, GPU loans return ErrNotSupported")
		if errors.Is(err, cuda.ErrNotSupported) {
			fix("for GPU pools install the NVIDIA driver (it provides libcuda.so.1), e.g. apt-get install nvidia-driver, and check nvidia-smi")
		}
	} else {
		info, _ := dev.Info()
		vmm, _ := dev.VMMSupported()
		fds, _ := dev.POSIXFDSupported()
		fmt.Fprintf(w, "  device 0         %s, compute %d.%d\n", info.Name, info.Major, info.Minor)
		switch {
		case vmm && fds:
			fmt.Fprintln(w, "  pool sharing     CUDA VMM + POSIX file descriptors (SCM_RIGHTS)")
		default:
			fmt.Fprintln(w, "  pool sharing     legacy CUDA IPC handles (no VMM file descriptors on this device)")
		}
		dev.Close()
		if m := gpuinfo.ReadMPS(); m.On {
			fmt.Fprintf(w, "  MPS              %s: the CUDA work of all processes on a GPU shares one context\n", m)
		} else {
			fmt.Fprintln(w, "  MPS              off: each process's kernels get the GPU in time slices")
			fmt.Fprintln(w, "  → several GPU subscriber processes on one GPU are delivered faster under MPS: nvidia-cuda-mps-control -d (README, GPU subscribers in several processes)")
		}
	}

	fmt.Fprintln(w, "daemon (rgapsd)")
	cfg, _ := (zerocopy.Config{}).FromEnv()
	if c, err := gpupool.Dial(cfg.Prefix, cfg.Domain, false); err != nil {
		fmt.Fprintf(w, "  domain %d: not running (started automatically when a GPU topic needs it)\n", cfg.Domain)
		if _, err := gpupool.DaemonBinary(); err != nil {
			fix("put the rgaps binary on PATH (or set RGAPS_DAEMON) so GPU topics can start the daemon")
		}
	} else {
		pid, _ := c.Ping()
		pools, _ := c.Stats()
		fmt.Fprintf(w, "  domain %d: running, pid %d, %d GPU pools\n", cfg.Domain, pid, len(pools))
		c.Close()
	}
	fmt.Fprintln(w, "inter-host bridge")
	bst, err := bridgestatus.Query(cfg)
	if errors.Is(err, bridgestatus.ErrVersion) {
		fmt.Fprintf(w, "  domain %d: %v\n", cfg.Domain, err)
	} else if err != nil || bst.Provider == "" {
		fmt.Fprintf(w, "  domain %d: no daemon bridges this host (rgaps daemon -peers HOST, or -config FILE)\n", cfg.Domain)
	} else {
		up := 0
		for _, p := range bst.Peers {
			if p.Up {
				up++
			}
		}
		fmt.Fprintf(w, "  host %s, data path %s, %d of %d peers up\n", bst.Host, bst.Provider, up, len(bst.Peers))
		for _, p := range bst.Peers {
			if !p.Up {
				fix("peer %s is down: check that its daemon runs, the address, the cluster secret and the firewall", p.Host)
			}
		}
	}
	fmt.Fprintln(w, "DDS gateway")
	if err != nil || bst.DDS == nil {
		fmt.Fprintf(w, "  domain %d: not reported (rgaps daemon -dds carries topics to and from ROS 2 nodes on Cyclone DDS)\n", cfg.Domain)
	} else {
		fmt.Fprintf(w, "  participant %s, %d ROS 2 nodes on DDS, %d of their endpoints on carried topics, %d malformed ros_discovery_info samples dropped\n",
			bst.DDS.Participant, len(bst.DDS.Nodes), len(bst.DDS.Endpoints), bst.DDS.Malformed)
	}

	if len(fixes) == 0 {
		fmt.Fprintln(w, "\nnothing to fix")
		return
	}
	fmt.Fprintln(w, "\nto fix:")
	for _, f := range fixes {
		fmt.Fprintln(w, "  - "+f)
	}
}

func kernelAtLeast(release string, major, minor int) bool {
	var a, b int
	fmt.Sscanf(strings.SplitN(release, "-", 2)[0], "%d.%d", &a, &b)
	return a > major || a == major && b >= minor
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

package benche2e

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rmw-rgaps/rmw_rgaps/bench/iceoryx"
	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/gpuinfo"
)

// Machine describes where a run happened.
type Machine struct {
	GPUA         string `json:"gpu_a"` // "name, PCI bus, memory" or why none
	GPUB         string `json:"gpu_b"`
	NvidiaDriver string `json:"nvidia_driver"`
	CUDADriver   string `json:"cuda_driver_api"`
	MPS          string `json:"mps"` // gpuinfo.MPS: "off" or "on (control daemon in DIR)"
	CPU          string `json:"cpu"`
	Cores        int    `json:"cores"`
	Kernel       string `json:"kernel"`
	OS           string `json:"os"`
	ShmSize      uint64 `json:"dev_shm_size"`
	Iceoryx      string `json:"iceoryx"`
	Go           string `json:"go"`
	Date         string `json:"date"`
}

func describe(env *Env) Machine {
	m := Machine{
		GPUA: "none: host-memory fallback (copies are memcpy)", GPUB: "none: host-memory fallback",
		NvidiaDriver: "none", CUDADriver: "none", MPS: "no GPU",
		CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(), Kernel: benchutil.KernelRelease(), OS: "unknown",
		Go: benchutil.GoVersion(), Date: time.Now().UTC().Format(time.RFC3339),
	}
	if env.GPU {
		m.GPUA, m.GPUB = gpuName(env.DeviceA), gpuName(env.DeviceB)
		if v, err := cuda.DriverVersion(); err == nil {
			m.CUDADriver = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
		}
		m.NvidiaDriver = benchutil.NvidiaDriver()
		m.MPS = gpuinfo.ReadMPS().String()
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil {
		m.ShmSize = st.Blocks * uint64(st.Bsize)
	}
	m.Iceoryx = "not found"
	if env.IoxRouDi != "" {
		lib := "the system's"
		if env.IoxLibDir != "" {
			lib = env.IoxLibDir
		}
		m.Iceoryx = fmt.Sprintf("2.0 C binding (libiceoryx_binding_c.so.2, %s libraries), RouDi %s", lib, env.IoxRouDi)
		if err := iceoryx.Load(); err != nil {
			m.Iceoryx += "; binding not loadable: " + err.Error()
		}
	}
	return m
}

func gpuName(ordinal int) string {
	d, err := cuda.Open(ordinal)
	if err != nil {
		return fmt.Sprintf("device %d: %v", ordinal, err)
	}
	defer d.Close()
	in, err := d.Info()
	if err != nil {
		return fmt.Sprintf("device %d: %v", ordinal, err)
	}
	return fmt.Sprintf("%d: %s (%s, %d GiB, compute %d.%d)", ordinal, in.Name, in.PCIBusID, in.TotalMem>>30, in.Major, in.Minor)
}

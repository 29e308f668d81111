package benchgpu

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/gpuinfo"
)

// Machine describes where a run happened.
type Machine struct {
	GPU          string `json:"gpu"`
	GPUOrdinal   int    `json:"gpu_ordinal"`
	PCIBusID     string `json:"pci_bus_id"`
	GPUMemory    uint64 `json:"gpu_memory"`
	Compute      string `json:"compute_capability"`
	SMs          int    `json:"multiprocessors"`
	VMM          bool   `json:"vmm"`
	NvidiaDriver string `json:"nvidia_driver"` // kernel module version, "580.159.04"
	CUDADriver   string `json:"cuda_driver_api"`
	MPS          string `json:"mps"` // gpuinfo.MPS: "off" or "on (control daemon in DIR)"

	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"` // logical CPUs online
	Kernel  string `json:"kernel"`
	OS      string `json:"os"`
	ShmSize uint64 `json:"dev_shm_size"`
	Go      string `json:"go"`
	Date    string `json:"date"`
}

// machineInfo describes this host and dev (nil: the tests' fake device).
func machineInfo(dev *cuda.Device) Machine {
	m := Machine{
		GPU: "fake device (tests)", NvidiaDriver: "unknown", CUDADriver: "unknown", MPS: "unknown",
		CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(), Kernel: benchutil.KernelRelease(), OS: "unknown",
		Go: benchutil.GoVersion(), Date: time.Now().Format(time.RFC3339),
	}
	if dev != nil {
		m.GPUOrdinal = dev.Ordinal()
		if in, err := dev.Info(); err == nil {
			m.GPU, m.PCIBusID, m.GPUMemory = in.Name, in.PCIBusID, in.TotalMem
			m.Compute = fmt.Sprintf("%d.%d", in.Major, in.Minor)
			m.SMs, m.VMM = in.Multiprocessors, in.VMM
			m.CUDADriver = fmt.Sprintf("%d.%d", in.DriverVersion/1000, in.DriverVersion%1000/10)
		} else {
			m.GPU = "unknown (" + err.Error() + ")"
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
	return m
}

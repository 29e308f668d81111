// Package gpuinfo describes the GPUs of this machine and their topology
// (name, memory, PCI bus id, NUMA node) through NVIDIA's management library
// (github.com/NVIDIA/go-nvml, which loads libnvidia-ml.so.1 at run time), for
// `rgaps doctor` and benchmark reports. Nothing here is on a data path.
package gpuinfo

import (
	"errors"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// ErrNoNVML: the management library is absent or found no driver.
var ErrNoNVML = errors.New("NVML not available")

// GPU is one device as NVML sees it.
type GPU struct {
	Index    int
	Name     string
	UUID     string
	MemTotal uint64
	MemFree  uint64
	PCIBusID string
	NUMANode int // -1 when the platform has none
}

// Report is what NVML says about the machine.
type Report struct {
	DriverVersion string
	CUDAVersion   int // e.g. 13000
	GPUs          []GPU
}

// Read queries NVML; the error wraps ErrNoNVML when the library or the
// driver is missing.
func Read() (r Report, err error) {
	defer func() {
		// go-nvml panics when libnvidia-ml cannot be loaded at all on some
		// versions; treat it as absent.
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrNoNVML, p)
		}
	}()
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		return r, fmt.Errorf("%w: %s", ErrNoNVML, nvml.ErrorString(ret))
	}
	defer nvml.Shutdown()
	if v, ret := nvml.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		r.DriverVersion = v
	}
	if v, ret := nvml.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		r.CUDAVersion = v
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return r, fmt.Errorf("counting GPUs: %s", nvml.ErrorString(ret))
	}
	for i := 0; i < n; i++ {
		d, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return r, fmt.Errorf("GPU %d: %s", i, nvml.ErrorString(ret))
		}
		g := GPU{Index: i, NUMANode: -1}
		g.Name, _ = d.GetName()
		g.UUID, _ = d.GetUUID()
		if m, ret := d.GetMemoryInfo(); ret == nvml.SUCCESS {
			g.MemTotal, g.MemFree = m.Total, m.Free
		}
		if p, ret := d.GetPciInfo(); ret == nvml.SUCCESS {
			g.PCIBusID = cString(p.BusId[:])
		}
		if node, ret := d.GetNumaNodeId(); ret == nvml.SUCCESS {
			g.NUMANode = node
		}
		r.GPUs = append(r.GPUs, g)
	}
	return r, nil
}

func cString[T ~int8 | ~uint8](b []T) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}

package benchbridge

import (
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
	"github.com/rmw-rgaps/rmw_rgaps/internal/benchutil"
)

// Machine describes where a run happened.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"` // logical CPUs online
	Kernel    string `json:"kernel"`
	OS        string `json:"os"`
	Go        string `json:"go"`
	Libfabric bool   `json:"libfabric"` // built with libfabric
	Date      string `json:"date"`
}

func machineInfo() Machine {
	m := Machine{CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(), Kernel: benchutil.KernelRelease(), OS: "unknown",
		Go: benchutil.GoVersion(), Libfabric: fabric.Available, Date: time.Now().UTC().Format(time.RFC3339)}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	return m
}

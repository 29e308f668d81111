package benchbridge

import (
	"os"
	"runtime"
	"strings"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport/fabric"
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
	// Load is /proc/loadavg's 1-, 5- and 15-minute averages at the start
	// and at the end of the run: on a shared machine they say how much
	// the figures are worth.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end"`
}

// loadAvg is the first three fields of /proc/loadavg, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func machineInfo() Machine {
	m := Machine{CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(), Kernel: benchutil.KernelRelease(), OS: "unknown",
		Go: benchutil.GoVersion(), Libfabric: fabric.Available, Date: time.Now().UTC().Format(time.RFC3339), LoadStart: loadAvg()}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
				m.OS = strings.Trim(v, `"`)
			}
		}
	}
	return m
}

package benchbridge

import (
	"runtime"
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

// loadAvg is benchutil.LoadAvg.
func loadAvg() string { return benchutil.LoadAvg() }

func machineInfo() Machine {
	return Machine{CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(), Kernel: benchutil.KernelRelease(), OS: benchutil.OSName(),
		Go: benchutil.GoVersion(), Libfabric: fabric.Available, Date: time.Now().UTC().Format(time.RFC3339), LoadStart: loadAvg()}
}

// MachineInfo describes this machine now (the load at the start); the
// other benchmarks of two hosts report it too.
func MachineInfo() Machine { return machineInfo() }

package benchlocal

import (
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	benchutil "github.com/rmw-rgaps/rmw_rgaps/bench/util"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Machine describes where a run happened.
type Machine struct {
	CPU         string `json:"cpu"`
	Cores       int    `json:"cores"` // logical CPUs online (runtime.NumCPU)
	GOMAXPROCS  int    `json:"gomaxprocs"`
	Kernel      string `json:"kernel"`
	Go          string `json:"go"`
	Date        string `json:"date"`
	Clocksource string `json:"clocksource"`
	ClockNs     int64  `json:"clock_read_ns"` // median cost of one time.Now()
	// WakeP50, WakeP99: futex wake → run between two threads of this
	// process, no engine involved: the floor of any futex notification on
	// this machine (see wakeFloor).
	WakeP50 int64 `json:"futex_wake_p50_ns"`
	WakeP99 int64 `json:"futex_wake_p99_ns"`
}

func machineInfo() Machine {
	m := Machine{
		CPU: benchutil.CPUModel(), Cores: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		Kernel: benchutil.KernelRelease(), Go: benchutil.GoVersion(),
		Date: time.Now().Format(time.RFC3339), Clocksource: "unknown",
	}
	if b, err := os.ReadFile("/sys/devices/system/clocksource/clocksource0/current_clocksource"); err == nil {
		m.Clocksource = strings.TrimSpace(string(b))
	}
	m.ClockNs = clockCost()
	m.WakeP50, m.WakeP99 = wakeFloor(5000)
	return m
}

func futexWait(w *atomic.Uint32, v uint32) { shm.Wait(w, v, -1) }

func futexWake(w *atomic.Uint32) { shm.Wake(w, 1) }

// wakeFloor ping-pongs n times between two OS threads over two futex words
// and returns the median and 99th percentile of stamp → woken thread
// running: what a wakeup costs here before any middleware adds to it.
func wakeFloor(n int) (p50, p99 int64) {
	var ping, pong atomic.Uint32
	var t0 atomic.Int64
	lat := make([]int64, n)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for i := range uint32(n) {
			for ping.Load() == i {
				futexWait(&ping, i)
			}
			lat[i] = time.Now().UnixNano() - t0.Load()
			pong.Add(1)
			futexWake(&pong)
		}
		close(done)
	}()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for i := range uint32(n) {
		t0.Store(time.Now().UnixNano())
		ping.Add(1)
		futexWake(&ping)
		for pong.Load() == i {
			futexWait(&pong, i)
		}
	}
	<-done
	slices.Sort(lat)
	return benchutil.Percentile(lat, 50), benchutil.Percentile(lat, 99)
}

// clockCost is the median of 1000 measurements of back-to-back time.Now.
func clockCost() int64 {
	d := make([]int64, 1000)
	for i := range d {
		t0 := time.Now()
		d[i] = int64(time.Since(t0))
	}
	slices.Sort(d)
	return d[len(d)/2]
}

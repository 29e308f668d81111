package benchscale

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Mem is a process's memory as /proc/PID/status tells it, in KiB.
type Mem struct {
	RSS   int64 `json:"rss_kib"`       // VmRSS: resident now
	HWM   int64 `json:"hwm_kib"`       // VmHWM: the most resident ever
	Anon  int64 `json:"rss_anon_kib"`  // RssAnon: the Go heap, stacks, C allocations
	Shmem int64 `json:"rss_shmem_kib"` // RssShmem: mapped /dev/shm pages (topic segments, rings)
	File  int64 `json:"rss_file_kib"`  // RssFile: the binary and libraries
	// PSS is the proportional set size (/proc/PID/smaps_rollup): shared
	// pages divided among the processes that map them (the topics'
	// pages are mapped by their publishers and subscribers too).
	PSS int64 `json:"pss_kib"`
	// Base is VmRSS once the daemons had connected, before any endpoint.
	Base    int64 `json:"base_rss_kib"`
	Threads int   `json:"threads"`
}

// readMem reads pid's memory figures.
func readMem(pid int) (Mem, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Mem{}, err
	}
	var m Mem
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			m.RSS = n
		case "VmHWM":
			m.HWM = n
		case "RssAnon":
			m.Anon = n
		case "RssShmem":
			m.Shmem = n
		case "RssFile":
			m.File = n
		case "Threads":
			m.Threads = int(n)
		}
	}
	if m.RSS == 0 {
		return m, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Pss:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					m.PSS, _ = strconv.ParseInt(f[0], 10, 64)
				}
			}
		}
	}
	return m, nil
}

// readRSS is pid's VmRSS in KiB.
func readRSS(pid int) (int64, error) {
	m, err := readMem(pid)
	return m.RSS, err
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times (100 on
// every Linux architecture this runs on).
const clockTicks = 100

// cpuTicks is pid's user plus system time (/proc/PID/stat fields 14 and
// 15: all its threads, in clock ticks).
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): fields 14 and 15 are f[11] and f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times %q %q", pid, f[11], f[12])
	}
	return u + s, nil
}

// idleCPU measures each process's CPU time over window and returns it as
// a percentage of one core.
func idleCPU(pids []int, window time.Duration) ([]float64, error) {
	before := make([]int64, len(pids))
	for i, p := range pids {
		t, err := cpuTicks(p)
		if err != nil {
			return nil, err
		}
		before[i] = t
	}
	t0 := time.Now()
	time.Sleep(window)
	el := time.Since(t0)
	out := make([]float64, len(pids))
	for i, p := range pids {
		t, err := cpuTicks(p)
		if err != nil {
			return nil, err
		}
		out[i] = 100 * float64(t-before[i]) / clockTicks / el.Seconds()
	}
	return out, nil
}

package benchutil

import (
	"bufio"
	"os"
	"regexp"
	"runtime"
	"strings"
)

// CPUModel is the first "model name" of /proc/cpuinfo, or "unknown".
func CPUModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// KernelRelease is the running kernel's release, or "unknown".
func KernelRelease() string {
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		return strings.TrimSpace(string(b))
	}
	return "unknown"
}

// GoVersion is the toolchain and platform of this binary: "go1.26.8
// linux/amd64".
func GoVersion() string { return runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH }

var driverVersion = regexp.MustCompile(`\b\d{3,}\.\d+(\.\d+)?\b`)

// NvidiaDriver reads the NVIDIA kernel module's version ("unknown" without
// one).
func NvidiaDriver() string {
	if b, err := os.ReadFile("/sys/module/nvidia/version"); err == nil {
		if v := strings.TrimSpace(string(b)); v != "" {
			return v
		}
	}
	if b, err := os.ReadFile("/proc/driver/nvidia/version"); err == nil {
		if v := driverVersion.FindString(string(b)); v != "" {
			return v
		}
	}
	return "unknown"
}

// LoadAvg is the first three fields of /proc/loadavg (the 1-, 5- and
// 15-minute load averages), or "unknown": on a shared machine they say
// how much a run's figures are worth.
func LoadAvg() string {
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

// OSName is PRETTY_NAME of /etc/os-release, or "unknown".
func OSName() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return "unknown"
}

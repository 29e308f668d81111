package gpuinfo

import (
	"os"
	"path/filepath"
)

// DefaultMPSPipeDir is where the CUDA driver looks for NVIDIA's
// Multi-Process Service when CUDA_MPS_PIPE_DIRECTORY is not set.
const DefaultMPSPipeDir = "/tmp/nvidia-mps"

// MPS is what a CUDA program started now would find of the Multi-Process
// Service. With MPS, the CUDA work of all processes on a GPU runs in one
// server context; without it each process has a context of its own and the
// GPU time-slices between them, which slows down subscribers in several
// processes that each run kernels on the same GPU (docs/BENCHMARKS.md).
type MPS struct {
	PipeDir string // $CUDA_MPS_PIPE_DIRECTORY, else DefaultMPSPipeDir
	// On: the control daemon's socket ("control") is in PipeDir, where
	// the driver looks for it when it creates a context. A socket left
	// behind by a daemon that was killed reads as on too.
	On bool
}

// ReadMPS looks for the MPS control daemon's socket. It does not connect:
// the daemon logs every connection that sends no credentials.
func ReadMPS() MPS {
	m := MPS{PipeDir: os.Getenv("CUDA_MPS_PIPE_DIRECTORY")}
	if m.PipeDir == "" {
		m.PipeDir = DefaultMPSPipeDir
	}
	fi, err := os.Stat(filepath.Join(m.PipeDir, "control"))
	m.On = err == nil && fi.Mode()&os.ModeSocket != 0
	return m
}

// String is the one-line form of reports: "on (control daemon in DIR)" or
// "off".
func (m MPS) String() string {
	if m.On {
		return "on (control daemon in " + m.PipeDir + ")"
	}
	return "off"
}

package gpuinfo

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

func TestReadMPS(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CUDA_MPS_PIPE_DIRECTORY", dir)
	if m := ReadMPS(); m.On || m.PipeDir != dir || m.String() != "off" {
		t.Fatalf("empty pipe directory: %+v %q, want off in %s", m, m.String(), dir)
	}
	// A file that is not a socket is no control daemon.
	if err := os.WriteFile(filepath.Join(dir, "control"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if m := ReadMPS(); m.On {
		t.Fatalf("regular file named control: %+v, want off", m)
	}
	os.Remove(filepath.Join(dir, "control"))
	l, err := net.Listen("unix", filepath.Join(dir, "control"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if m := ReadMPS(); !m.On || m.String() != "on (control daemon in "+dir+")" {
		t.Fatalf("control socket: %+v %q, want on", m, m.String())
	}
	t.Setenv("CUDA_MPS_PIPE_DIRECTORY", "")
	if m := ReadMPS(); m.PipeDir != DefaultMPSPipeDir {
		t.Fatalf("unset variable: pipe directory %q, want %q", m.PipeDir, DefaultMPSPipeDir)
	}
}

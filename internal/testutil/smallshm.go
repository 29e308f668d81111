package testutil

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// SmallShmEnv tells a re-executed test binary the size of the tmpfs to
// mount over /dev/shm (see InSmallShm).
const SmallShmEnv = "RGAPS_TEST_SMALL_SHM"

// InSmallShm runs the calling test again in a child process that has a
// private mount namespace with a tmpfs of size (such as "64m") over
// /dev/shm, as a container's /dev/shm would be. It returns true in that
// child, where the caller runs its body (and every process it starts sees
// the small /dev/shm), and false in the parent once the child finished and
// its verdict and output were reported: the caller then returns. It skips
// when this process cannot make a mount namespace (not root, or no
// CAP_SYS_ADMIN), with the reason. Call it first, from a top-level test.
func InSmallShm(t *testing.T, size string) bool {
	t.Helper()
	if v := os.Getenv(SmallShmEnv); v != "" {
		// Keep the tmpfs inside this namespace, then hide the real /dev/shm.
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatalf("making mounts private: %v", err)
		}
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size="+v); err != nil {
			t.Fatalf("mounting a %s tmpfs on /dev/shm: %v", v, err)
		}
		return true
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: mounts a small tmpfs over /dev/shm in a private mount namespace")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), SmallShmEnv+"="+size)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) {
			t.Skipf("cannot make a mount namespace for a small /dev/shm: %v", err)
		}
		t.Fatalf("starting the test in a mount namespace: %v", err)
	}
	t.Logf("in a %s /dev/shm:\n%s", size, out)
	switch {
	case err != nil:
		t.Fatalf("test failed in a %s /dev/shm: %v", size, err)
	case strings.Contains(string(out), "--- SKIP: "+t.Name()):
		t.Skip("skipped in the mount namespace (see the output above)")
	case !strings.Contains(string(out), "--- PASS: "+t.Name()):
		t.Fatalf("the test did not run in the mount namespace")
	}
	return false
}

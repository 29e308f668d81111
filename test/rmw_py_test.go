package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRmwPython runs test/python/rgaps_gpu_check.py: the rclpy module
// rgaps_gpu (python/rgaps_gpu) against this checkout's librmw_rgaps.so in a
// real rclpy process. It needs ROS 2 (rclpy, std_msgs) in the environment,
// which CI does not have: it skips there, saying so.
func TestRmwPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	if out, err := exec.Command(py, "-c", "import rclpy, std_msgs.msg, numpy").CombinedOutput(); err != nil {
		t.Skipf("rclpy, std_msgs or numpy not importable (ROS 2 not sourced): %s", strings.TrimSpace(lastLine(string(out))))
	}
	k := rmwBuild(t)
	root, _ := filepath.Abs("..")
	env := append(rmwEnv(k, 74), "RMW_IMPLEMENTATION=rmw_rgaps",
		"LD_LIBRARY_PATH="+k.dir+":"+os.Getenv("LD_LIBRARY_PATH"),
		"PYTHONPATH="+filepath.Join(root, "python")+":"+os.Getenv("PYTHONPATH"))
	p, _ := rmwStart(t, env, py, filepath.Join(root, "test", "python", "rgaps_gpu_check.py"))
	rmwPassed(t, p)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

//go:build cgo && !nodds

package dds

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

// buildIDLEcho compiles testdata/idl_echo.c with the type idlc generates
// from testdata/String.idl, against Cyclone's headers and libddsc
// (cyclonedds-dev, cyclonedds-tools).
func buildIDLEcho(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"idlc", "gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (scripts/setup.sh installs cyclonedds-tools and gcc): %v", tool, err)
		}
	}
	dir := t.TempDir()
	idl, _ := filepath.Abs("testdata/String.idl")
	src, _ := filepath.Abs("testdata/idl_echo.c")
	run := func(name string, args ...string) {
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	run("idlc", "-l", "c", idl)
	run("gcc", "-O1", "-o", "idl_echo", src, "String.c", "-I.", "-lddsc")
	return filepath.Join(dir, "idl_echo")
}

// TestInteropIDLProgram exchanges std_msgs/String messages with a DDS
// program that does not use this package: our raw writer to its typed
// reader (it prints what it decoded), its typed writer to our raw reader
// (bytes compared with the CDR ROS would produce).
func TestInteropIDLProgram(t *testing.T) {
	requireDDS(t)
	exe := buildIDLEcho(t)
	texts := []string{"hello", "Hello World: 1", "", "a longer message of forty-one characters!"}
	cmd := exec.Command(exe, strconv.Itoa(int(testDomain)), strconv.Itoa(len(texts)))
	// The program reads its configuration from CYCLONEDDS_URI: the same
	// localhost discovery as ours.
	cmd.Env = append(os.Environ(), "CYCLONEDDS_URI="+configXML(Config{Domain: testDomain}))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		s := bufio.NewScanner(stdout)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok || l != want {
				t.Fatalf("program said %q (open %v), want %q; stderr:\n%s", l, ok, want, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("program did not say %q; stderr:\n%s", want, stderr.String())
		}
	}

	p := openTest(t)
	in, err := p.Topic("/rgaps_idl_in", "std_msgs/msg/String")
	must(t, err)
	out, err := p.Topic("/rgaps_idl_out", "std_msgs/msg/String")
	must(t, err)
	w, err := in.NewWriter(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	r, err := out.NewReader(EndpointOptions{QoS: qos.Default()})
	must(t, err)
	expect("ready")
	waitMatched(t, "writer to the IDL reader", w.Matched)
	waitMatched(t, "reader of the IDL writer", r.Matched)
	for _, s := range texts {
		must(t, w.Write(stringCDR(s)))
		expect("got " + s)
	}
	for i, s := range texts {
		got := takeOne(t, r)
		if want := stringCDR("echo " + s); !bytes.Equal(got.Data, want) {
			t.Errorf("message %d from the IDL writer: %x, want %x", i, got.Data, want)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("program: %v\n%s", err, stderr.String())
	}
	if rest := strings.Join(drain(lines), "\n"); rest != "" {
		t.Errorf("program said more: %s", rest)
	}
}

func drain(c chan string) []string {
	var out []string
	for l := range c {
		out = append(out, l)
	}
	return out
}

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

func init() {
	register("bench", "benchmarks: runs rgaps-bench (local|gpu|bridge|e2e), a separate binary", runBench)
}

// runBench hands `rgaps bench ARGS` to the rgaps-bench binary beside this
// one (or on PATH): the benchmarks are a binary of their own so that the
// daemon links none of their code or plotting libraries.
func runBench(args []string) error {
	bin, err := benchBinary()
	if err != nil {
		return err
	}
	argv := append([]string{bin}, args...)
	if err := syscall.Exec(bin, argv, os.Environ()); err != nil {
		return fmt.Errorf("running %s: %w", bin, err)
	}
	return nil // not reached
}

// errNoBench says where the benchmarks went.
var errNoBench = errors.New("the benchmarks are the binary rgaps-bench now (go build ./cmd/rgaps-bench); none found beside rgaps or on PATH")

func benchBinary() (string, error) {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "rgaps-bench")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("rgaps-bench"); err == nil {
		return p, nil
	}
	return "", errNoBench
}

package testutil

import (
	"errors"
	"os"
	"testing"
)

// RequireGPUEnv is the variable that turns a missing GPU from a skip into
// a failure: the GPU machine's runs set it, so a skip there cannot hide a
// regression.
const RequireGPUEnv = "RGAPS_REQUIRE_GPU"

// GPURequired reports whether RGAPS_REQUIRE_GPU=1.
func GPURequired() bool { return os.Getenv(RequireGPUEnv) == "1" }

// SkipWithoutGPU is the one skip rule for missing GPU hardware: when err
// wraps notSupported (the engine's and the CUDA loader's ErrNotSupported,
// one sentinel) it skips the test saying why, or fails it when
// RGAPS_REQUIRE_GPU=1. Any other error, nil included, returns: the caller
// fails on real errors.
func SkipWithoutGPU(t testing.TB, err, notSupported error) {
	t.Helper()
	if err == nil || !errors.Is(err, notSupported) {
		return
	}
	if GPURequired() {
		t.Fatalf("%s=1 but: %v", RequireGPUEnv, err)
	}
	t.Skipf("no GPU: %v", err)
}

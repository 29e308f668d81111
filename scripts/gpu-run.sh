#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with build/ from
# scripts/gpu-build.sh: every GPU test (skips become failures), the demo,
# the C example on the GPU, and the GPU and local benchmarks. Results go to
# $OUT (or results/).
set -uo pipefail
out=${OUT:-results}
mkdir -p "$out"
export RGAPS_REQUIRE_GPU=1 PATH="$PWD/build:$PATH" RGAPS_DAEMON="$PWD/build/rgaps" GORACE=atexit_sleep_ms=0
fail=0
step() { echo; echo "== $*"; "$@" || { echo "FAILED: $*"; fail=1; }; }
step nvidia-smi -L
step build/rgaps doctor
(cd build && step ./cuda.test -test.count=1)
(cd build && step ./gpupool.test -test.count=1)
(cd build && step ./zerocopy.test -test.run 'GPU' -test.v -test.timeout 300s) 2>&1 | grep -E '^(---|ok|PASS|FAIL|leak)|gpu_test'
(cd build && step ./benchgpu.test -test.count=1 -test.run 'GPU')
step build/rgaps demo -n 100
export LD_LIBRARY_PATH="$PWD/build"
step build/rgaps_example sub /rgaps_capi_check 50 4194304 gpu &
sleep 2
step build/rgaps_example pub /rgaps_capi_check 50 4194304 gpu
wait
step build/rgaps bench gpu -q -out "$out" -json "$out/bench-gpu.json"
step build/rgaps bench local -q -json "$out/bench-local.json" > "$out/bench-local.md"
cat "$out/bench-local.md"
exit $fail

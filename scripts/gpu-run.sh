#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with build/ from
# scripts/gpu-build.sh: every GPU test (skips become failures), the demo
# (two emulated hosts), the C example on the GPU, and the benchmarks.
# STEPS selects what runs (default: all of "tests demo capi e2e gpu local
# bridge"; also "netns": rgaps-bench bridge -netns, and "scale":
# rgaps-bench scale). Results go to $OUT (or results/), their names
# prefixed by $NAME (default gpu).
set -uo pipefail
out=${OUT:-results}
name=${NAME:-gpu}
mkdir -p "$out"
steps=" ${STEPS:-tests demo capi e2e gpu local bridge} "
export RGAPS_REQUIRE_GPU=1 PATH="$PWD/build:$PATH" RGAPS_DAEMON="$PWD/build/rgaps" GORACE=atexit_sleep_ms=0
# libfabric (linked by rgaps and the bridge tests) from the bundle where the
# machine has none.
export LD_LIBRARY_PATH="$PWD/build/iox/lib:$PWD/build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fail=0
step() { echo; echo "== $*"; "$@" || { echo "FAILED: $*"; fail=1; }; }
want() { [[ "$steps" == *" $1 "* ]]; }
step nvidia-smi -L
step build/rgaps doctor
if want tests; then
	(cd build && step ./cuda.test -test.count=1)
	(cd build && step ./gpupool.test -test.count=1)
	(cd build && step ./zerocopy.test -test.run 'GPU' -test.v -test.timeout 300s) 2>&1 | grep -E '^(---|ok|PASS|FAIL|leak)|gpu_test'
	(cd build && step ./bridge.test -test.run 'GPU' -test.v -test.timeout 300s) 2>&1 | grep -E '^(---|ok|PASS|FAIL|leak)|gpu_test'
	(cd build && step ./gateway.test -test.run 'GPU' -test.v -test.timeout 300s) 2>&1 | grep -E '^(---|ok|PASS|FAIL|leak)|gpu_test'
	(cd build && step ./gpu.test -test.count=1 -test.run 'GPU')
	(cd build && RGAPS_RMW_BUILT="$PWD/rmw" step ./test.test -test.run 'TestRmwGPU' -test.v -test.timeout 300s) 2>&1 | grep -E '^\s*(---|ok|PASS|FAIL|GOT|leak)|rmw_gpu|loopback'
fi
want demo && step build/rgaps demo -n 100
if want capi; then
	step build/rgaps_example sub /rgaps_capi_check 50 4194304 gpu &
	sleep 2
	step build/rgaps_example pub /rgaps_capi_check 50 4194304 gpu
	wait
fi
want e2e && step build/rgaps-bench e2e ${E2E_ARGS:-} -out "$out/$name-bench-e2e"
want gpu && step build/rgaps-bench gpu -q ${GPU_ARGS:-} -out "$out" -json "$out/$name-bench-gpu.json"
if want local; then
	step build/rgaps-bench local -q ${LOCAL_ARGS:-} -json "$out/$name-bench-local.json" > "$out/$name-bench-local.md"
	cat "$out/$name-bench-local.md"
fi
if want bridge; then
	step build/rgaps-bench bridge ${BRIDGE_ARGS:-} > "$out/$name-bench-bridge.md"
	cat "$out/$name-bench-bridge.md"
fi
if want netns; then
	step build/rgaps-bench bridge -netns ${NETNS_ARGS:-} > "$out/$name-bench-bridge-netns.md"
	cat "$out/$name-bench-bridge-netns.md"
fi
if want scale; then
	step build/rgaps-bench scale ${SCALE_ARGS:-} > "$out/$name-bench-scale.md"
	cat "$out/$name-bench-scale.md"
fi
exit $fail

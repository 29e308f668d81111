#!/usr/bin/env bash
# Builds, here, everything the GPU machine runs (it has no Go toolchain):
# the rgaps and rgaps-bench binaries, GPU test binaries, the C library and
# its example, and (scripts/e2e-bundle.sh) the iceoryx and libfabric
# libraries the machine lacks. Then run scripts/gpu-run.sh there with build/ carried along.
source "$(dirname "$0")/setup.sh"
rm -rf build && mkdir -p build
go build -ldflags='-s -w' -o build/rgaps ./cmd/rgaps
go build -ldflags='-s -w' -o build/rgaps-bench ./cmd/rgaps-bench
for p in ./zerocopy ./zerocopy/gpupool ./internal/cuda ./bench/gpu ./bridge ./gateway; do
	go test -c -ldflags='-s -w' -o "build/$(basename "$p").test" "$p"
done
go build -buildmode=c-shared -o build/librgaps.so ./cmd/librgaps
# The rmw library and the C harness of its GPU loans (TestRmwGPU runs them
# prebuilt: RGAPS_RMW_BUILT=build/rmw), and the test binary that drives them.
mkdir -p build/rmw
go build -buildmode=c-shared -ldflags='-s -w' -o build/rmw/librmw_rgaps.so ./rmw
cc -std=gnu11 -O2 -Wall -Irmw/include -Irmw -Itypesupport/introspection -Iinclude -o build/rmw/rmw_gpu \
	rmw/test/rmw_gpu.c -Lbuild/rmw -lrmw_rgaps -lpthread -Wl,-rpath,'$ORIGIN'
go test -c -ldflags='-s -w' -o build/test.test ./test
cc -O2 -Wall -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude -o build/rgaps_example examples/c/rgaps_example.c -Lbuild -lrgaps
bash scripts/e2e-bundle.sh
# Cyclone DDS for the gateway's GPU test (loaded with dlopen; its iceoryx
# libraries are the bundle's, libssl 3 the machine's).
cp -L "$(ldconfig -p | awk '/libddsc\.so\.0debian / {print $NF; exit}')" build/iox/lib/
du -sh build
ls -la build

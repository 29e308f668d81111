package main

/*
#include "capi.h"
*/
import "C"

import (
	"os"
	"strconv"
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/cabi"
	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
)

// helper is the CUDA device of the rgaps_device_* functions: the primary
// context of RGAPS_GPU_DEVICE, retained on first use and never released, so
// that memory from rgaps_device_alloc outlives any handle.
var helper struct {
	once sync.Once
	dev  *cuda.Device
	err  error
}

func helperDevice() (*cuda.Device, error) {
	helper.once.Do(func() {
		ordinal := 0
		if v := os.Getenv("RGAPS_GPU_DEVICE"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				helper.err = errorf(cabi.Invalid, "RGAPS_GPU_DEVICE=%q is not a device ordinal", v)
				return
			}
			ordinal = n
		}
		helper.dev, helper.err = cuda.Open(ordinal)
	})
	return helper.dev, helper.err
}

//export rgapsgo_gpu_available
func rgapsgo_gpu_available() (rc C.int) {
	defer func() {
		if recover() != nil {
			rc = 0
		}
	}()
	if _, err := helperDevice(); err != nil {
		return 0
	}
	return 1
}

//export rgapsgo_device_alloc
func rgapsgo_device_alloc(size C.size_t, out *C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	dev, err := helperDevice()
	if err != nil {
		return report(err)
	}
	p, err := dev.Alloc(uint64(size))
	if err != nil {
		return report(err)
	}
	*out = C.uintptr_t(p)
	return codeOK
}

//export rgapsgo_device_free
func rgapsgo_device_free(p C.uintptr_t) (rc C.int) {
	defer recoverTo(&rc)
	dev, err := helperDevice()
	if err != nil {
		return report(err)
	}
	return report(dev.Free(cuda.DevicePtr(p)))
}

//export rgapsgo_device_fill_pattern
func rgapsgo_device_fill_pattern(p C.uintptr_t, size C.size_t, seed C.uint32_t) (rc C.int) {
	defer recoverTo(&rc)
	dev, err := helperDevice()
	if err != nil {
		return report(err)
	}
	if err := dev.FillPattern(cuda.DevicePtr(p), uint64(size), uint32(seed), nil); err != nil {
		return report(err)
	}
	return report(dev.CtxSynchronize())
}

//export rgapsgo_device_checksum
func rgapsgo_device_checksum(p C.uintptr_t, size C.size_t, out *C.uint64_t) (rc C.int) {
	defer recoverTo(&rc)
	dev, err := helperDevice()
	if err != nil {
		return report(err)
	}
	sum, err := dev.Checksum(cuda.DevicePtr(p), uint64(size))
	if err != nil {
		return report(err)
	}
	*out = C.uint64_t(sum)
	return codeOK
}

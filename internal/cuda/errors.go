package cuda

import (
	"errors"
	"fmt"
	"sync/atomic"
)

// ErrNotSupported is wrapped by every error that means "this machine cannot
// do it": no driver library, no device, a device without VMM or POSIX-fd
// export, or a driver answer of CUDA_ERROR_NOT_SUPPORTED. The engine aliases
// it; tests skip only on it.
var ErrNotSupported = errors.New("GPU not supported")

// ErrClosed is returned by every method of a Device (and of the streams,
// events, modules and allocations made from it) after Device.Close.
var ErrClosed = errors.New("CUDA device is closed")

// CUresult values callers may want to tell apart. The full list is NVIDIA's
// cuda.h; Error carries the driver's own name and description for any code.
const (
	CodeInvalidValue   = 1
	CodeOutOfMemory    = 2
	CodeNotInitialized = 3
	CodeNoDevice       = 100
	CodeInvalidDevice  = 101
	CodeInvalidImage   = 200
	CodeInvalidContext = 201
	CodeInvalidPTX     = 218
	CodeInvalidHandle  = 400
	CodeNotReady       = 600
	CodeNotSupported   = 801
)

// Error is a failed driver call.
type Error struct {
	Code        int    // the CUresult
	Name        string // e.g. "CUDA_ERROR_OUT_OF_MEMORY", from cuGetErrorName
	Description string // e.g. "out of memory", from cuGetErrorString
	Op          string // the entry point that failed, e.g. "cuMemAlloc_v2"
}

func (e *Error) Error() string {
	if e.Description == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Op, e.Name, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Op, e.Name, e.Code, e.Description)
}

// Is makes CUDA_ERROR_NOT_SUPPORTED match ErrNotSupported.
func (e *Error) Is(target error) bool {
	return target == ErrNotSupported && e.Code == CodeNotSupported
}

func newError(op string, code int) *Error {
	e := &Error{Code: code, Op: op}
	if name, desc, ok := errorText(code); ok {
		e.Name, e.Description = name, desc
	} else {
		e.Name = fmt.Sprintf("CUresult %d", code)
	}
	return e
}

// Live-resource accounting, so tests can fail on leaked GPU resources.
type resource int

const (
	resDevice resource = iota
	resDeviceMemory
	resHostRegistration
	resIPCMapping
	resStream
	resEvent
	resVMMAllocation
	resModule
	numResources
)

var resourceNames = [numResources]string{
	"device", "device allocation", "host registration", "IPC mapping",
	"stream", "event", "VMM allocation", "module",
}

var live [numResources]atomic.Int64

func track(r resource, delta int64) { live[r].Add(delta) }

// liveResources lists the resources opened and not yet released in this
// process, by kind; empty when none.
func liveResources() map[string]int64 {
	out := map[string]int64{}
	for i := range live {
		if n := live[i].Load(); n != 0 {
			out[resourceNames[i]] = n
		}
	}
	return out
}

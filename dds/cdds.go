//go:build cgo && !nodds

package dds

/*
#cgo LDFLAGS: -ldl
#include "rgdds_load.h"
#include "rgdds_serdata.h"
#include "rgdds_entities.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// Available reports whether this build has the Cyclone DDS binding (it
// may still fail to load the library: see Load).
func Available() bool { return true }

// libNames are the names libddsc is looked for under, after
// $RGAPS_DDSC_LIB: Debian's soname for its 0.10.2 package, then
// upstream's.
var libNames = []string{"libddsc.so.0debian", "libddsc.so.0"}

var load struct {
	once sync.Once
	path string
	err  error
}

// Load loads libddsc (from $RGAPS_DDSC_LIB, a file path, when set; else
// by the loader's search for libNames); later calls return the first
// call's result. Every other function calls it.
func Load() error {
	load.once.Do(func() {
		names := libNames
		if p := os.Getenv("RGAPS_DDSC_LIB"); p != "" {
			names = []string{p}
		}
		var tried []string
		for _, n := range names {
			cn := C.CString(n)
			var buf [512]C.char
			rc := C.rgd_load(cn, &buf[0], C.size_t(len(buf)))
			C.free(unsafe.Pointer(cn))
			if rc == 0 {
				load.path = n
				return
			}
			tried = append(tried, C.GoString(&buf[0]))
		}
		load.err = fmt.Errorf("%w: libddsc (Cyclone DDS 0.10) not loadable: %v", ErrNotSupported, tried)
	})
	return load.err
}

// LoadedFrom is the name libddsc was loaded by ("" when not loaded).
func LoadedFrom() string {
	if Load() != nil {
		return ""
	}
	return load.path
}

// check turns a negative Cyclone return code into an *Error.
func check(op string, rc C.int32_t) error {
	if rc >= 0 {
		return nil
	}
	return &Error{Op: op, Code: int32(rc), Name: C.GoString(C.rgd_strretcode(rc))}
}

// guidOf is the GUID of entity e.
func guidOf(e C.int32_t) (GUID, error) {
	var g GUID
	err := check("get GUID", C.rgd_get_guid(e, (*C.uint8_t)(unsafe.Pointer(&g[0]))))
	return g, err
}

// cbytes passes b to C: a pointer to its first byte (nil when empty), with
// its length.
func cbytes(b []byte) (unsafe.Pointer, C.size_t) {
	if len(b) == 0 {
		return nil, 0
	}
	return unsafe.Pointer(&b[0]), C.size_t(len(b))
}

// takeUserData copies user data C allocated and frees it.
func takeUserData(p unsafe.Pointer, n C.size_t) []byte {
	if p == nil {
		return nil
	}
	b := C.GoBytes(p, C.int(n))
	C.rgd_free(p)
	return b
}

// Package cabi is what the two C libraries of the project share at their C
// boundary: librmw_rgaps.so (package rmw) and librgaps.so (package
// cmd/librgaps). It owns:
//
//   - the handle table (Handles): the integers, or the addresses of C
//     structs, that C holds in place of Go pointers, with typed lookups
//     that report a stale, foreign or destroyed handle instead of
//     panicking;
//   - the panic and fault guard: PanicError turns what a library's
//     deferred recover caught into an Error (Internal for a bug, with its
//     stack on stderr; Fault for a memory fault at an address the C caller
//     gave, caught by Guarded);
//   - the one table from the engine's errors (zerocopy's sentinels, the
//     GPU pool daemon's, CUDA's) to a neutral Code, which each library
//     turns into its own C codes: RMW_RET_* for the rmw, RGAPS_E* for the
//     C API (include/rgaps.h). A library's own failures (a bad handle, a
//     NULL argument) are Errors carrying their Code.
//
// It must not import "C" or "unsafe" (only the libraries themselves are
// cgo packages: test/boundaries_test.go), nor any front end, the bridge or
// type support: it knows the engine's errors and nothing above them. It
// keeps no per-call state of its own; the thread-local error state of each
// library stays in that library's C half.
package cabi

// Package iceoryx binds the Eclipse iceoryx 2.0 C binding
// (libiceoryx_binding_c, Debian bookworm's 2.0.3 packages) for the
// baseline pipeline of `rgaps-bench e2e`: the thesis' Pageable-Iceoryx data
// path 3, where a subscribe-side manager publishes whole payloads through
// iceoryx and every subscriber copies its own. It also starts and stops
// RouDi, iceoryx's broker, with a configuration made for one run.
//
// # Loading
//
// The library is loaded at run time with dlopen, not linked: rgaps must
// start (and `rgaps-bench gpu`, the daemon, the topic tools must work) on
// machines without iceoryx. The headers are used at build time when they
// are installed (libiceoryx-binding-c-dev, /usr/include/iceoryx/v2.0.3);
// without them, or without cgo, the package builds and every call returns
// an error wrapping ErrNotSupported. Where the library is looked for, in
// order:
//
//  1. $RGAPS_IOX_LIB (a directory),
//  2. iox/lib beside the executable, and build/iox/lib in the working
//     directory (what scripts/e2e-bundle.sh produces, to be carried to a
//     machine without a package registry along with the binary),
//  3. the dynamic loader's own search (LD_LIBRARY_PATH, ld.so.cache).
//
// From a directory, the libraries the binding needs (platform, hoofs,
// posh) are loaded first by absolute path, so the loader finds them by
// their sonames without LD_LIBRARY_PATH. libstdc++ comes from the system.
//
// iox-roudi is found the same way: $RGAPS_IOX_ROUDI, iox/bin beside the
// executable, build/iox/bin, then PATH; RouDi (a separate process) gets
// LD_LIBRARY_PATH set to the library directory found.
//
// # One RouDi per machine
//
// iceoryx 2.0 allows one RouDi per machine (fixed shared-memory and socket
// names). StartRouDi therefore holds an exclusive flock on
// $TMPDIR/rgaps-iox-roudi.lock while its RouDi runs: two runs on one
// machine (two test packages, say) take turns instead of failing.
//
// This package is one of the owners of import "C" and unsafe: chunk memory
// is handed out as byte slices over iceoryx's shared memory. It must not
// be used on rgaps' own data paths.
package iceoryx

package cabi

import (
	"fmt"
	"os"
	"runtime/debug"
)

// fault is the panic value Guarded raises for a memory fault.
type fault struct {
	what string
	addr uintptr
}

// Guarded runs fn, which reads memory the C caller pointed at (a string, a
// payload), turning a memory fault (unmapped or protected memory) into a
// panic that PanicError reports as Fault, instead of a crash of the host
// process. Other panics go on unchanged. It must run inside a function
// that defers the library's recover.
func Guarded(what string, fn func()) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if a, ok := r.(interface{ Addr() uintptr }); ok {
				panic(fault{what: what, addr: a.Addr()})
			}
			if e, ok := r.(error); ok && e.Error() == "runtime error: invalid memory address or nil pointer dereference" {
				panic(fault{what: what})
			}
			panic(r)
		}
	}()
	fn()
}

// PanicError is the failure a function exported to C returns for r, what
// its deferred recover caught: a Fault for a memory fault in Guarded, else
// an Internal error (a bug), whose stack goes to stderr under lib's name
// because no C error message can hold it. Every exported function defers
// a recover that reports PanicError's result as its own code (recover
// works only when called by the deferred function itself, so that stays
// in each library):
//
//	func recoverTo(rc *C.int) {
//		if r := recover(); r != nil {
//			*rc = report(cabi.PanicError("librgaps", r))
//		}
//	}
//
// and every exported function starts with `defer recoverTo(&rc)`.
func PanicError(lib string, r any) *Error {
	if f, ok := r.(fault); ok {
		if f.addr == 0 {
			return &Error{Code: Fault, Msg: fmt.Sprintf("%s: cannot read the address given", f.what)}
		}
		return &Error{Code: Fault, Msg: fmt.Sprintf("%s: cannot read address %#x", f.what, f.addr)}
	}
	fmt.Fprintf(os.Stderr, "%s: internal error: %v\n%s", lib, r, debug.Stack())
	return &Error{Code: Internal, Msg: fmt.Sprintf("internal error (please report): %v", r)}
}

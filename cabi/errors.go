package cabi

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/gpupool"
)

// Code is the class of a failure, neutral between the C APIs: each library
// maps every Code to one of its own codes (several Codes may share one).
// The values are not part of any ABI; the libraries' codes are.
type Code int

const (
	OK            Code = iota
	Generic            // anything not below; the message says what
	Invalid            // a bad argument (zerocopy.ErrInvalid)
	BadHandle          // a NULL, unknown or destroyed handle
	TypeMismatch       // the topic exists with another type
	NotSupported       // this machine lacks what it takes (no GPU, ...)
	Timeout            // a wait ran out (zerocopy.ErrTimeout, deadlines)
	NoData             // nothing queued for a non-blocking take
	NoMessage          // the handle holds no taken message
	Closed             // the object was closed (during the call)
	PoolExhausted      // the topic's pool stayed full
	TooLarge           // larger than the topic's whole pool
	QueueFull          // a reliable subscription's queue stayed full
	Limit              // too many endpoints, loans or taken samples
	Corrupt            // a corrupt segment, or one of another layout version
	NoSpace            // /dev/shm (or host memory) has no room
	Untrusted          // a segment this process refuses to use
	NoDaemon           // no GPU pool daemon runs or could be started
	Device             // a CUDA call failed
	Fault              // a pointer the caller gave could not be read
	Internal           // a bug: a panic was caught
	numCodes
)

var codeNames = [numCodes]string{
	OK: "ok", Generic: "error", Invalid: "invalid argument", BadHandle: "bad handle",
	TypeMismatch: "type mismatch", NotSupported: "not supported", Timeout: "timed out",
	NoData: "no data", NoMessage: "no message held", Closed: "closed",
	PoolExhausted: "pool exhausted", TooLarge: "too large", QueueFull: "queue full",
	Limit: "limit reached", Corrupt: "corrupt", NoSpace: "no space",
	Untrusted: "untrusted segment", NoDaemon: "no daemon", Device: "device error",
	Fault: "fault", Internal: "internal error",
}

func (c Code) String() string {
	if c >= 0 && c < numCodes {
		return codeNames[c]
	}
	return fmt.Sprintf("cabi.Code(%d)", int(c))
}

// Codes is every Code but OK, for a library's test that maps each.
func Codes() []Code {
	cs := make([]Code, 0, numCodes-1)
	for c := Generic; c < numCodes; c++ {
		cs = append(cs, c)
	}
	return cs
}

// Error is a failure whose Code a library decided itself (a NULL handle, a
// bad memory kind); its message is shown as it is.
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Errorf makes an Error with a formatted message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// engineErrors is the table: the first entry err matches (errors.Is)
// decides its Code. Order matters where the engine wraps one error in
// another: a loan that found /dev/shm full is ErrPoolExhausted wrapping
// ErrNoSpace, and is PoolExhausted.
var engineErrors = []struct {
	err  error
	code Code
}{
	{zerocopy.ErrNotSupported, NotSupported},
	{zerocopy.ErrInvalid, Invalid},
	{zerocopy.ErrTimeout, Timeout},
	{context.DeadlineExceeded, Timeout},
	{os.ErrDeadlineExceeded, Timeout},
	{zerocopy.ErrNoData, NoData},
	{zerocopy.ErrClosed, Closed},
	{cuda.ErrClosed, Closed},
	{zerocopy.ErrPoolExhausted, PoolExhausted},
	{zerocopy.ErrTooLarge, TooLarge},
	{zerocopy.ErrQueueFull, QueueFull},
	{zerocopy.ErrTypeMismatch, TypeMismatch},
	{zerocopy.ErrTooManyLoans, Limit},
	{zerocopy.ErrTooManyEndpoints, Limit},
	{zerocopy.ErrTooManyNodes, Limit},
	{zerocopy.ErrCorrupt, Corrupt},
	{zerocopy.ErrVersion, Corrupt},
	{zerocopy.ErrNoSpace, NoSpace},
	{zerocopy.ErrUntrusted, Untrusted},
	{gpupool.ErrNoDaemon, NoDaemon},
}

// CodeOf is the Code of err: OK for nil, an Error's own Code, the table's
// Code for the engine's errors, Device for any other failed CUDA call,
// else Generic.
func CodeOf(err error) Code {
	if err == nil {
		return OK
	}
	var ce *Error
	if errors.As(err, &ce) {
		return ce.Code
	}
	for _, e := range engineErrors {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	var cu *cuda.Error
	if errors.As(err, &cu) {
		return Device
	}
	return Generic
}

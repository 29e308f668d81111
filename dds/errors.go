package dds

import (
	"errors"
	"fmt"
)

var (
	// ErrNotSupported reports that Cyclone DDS cannot be used here:
	// libddsc not loadable, another ABI than 0.10's, or a build without
	// cgo (or with the nodds tag). It is wrapped with what is missing;
	// tests skip only on it.
	ErrNotSupported = errors.New("dds: Cyclone DDS not available")
	// ErrClosed is returned by the methods of a closed participant,
	// writer or reader.
	ErrClosed = errors.New("dds: closed")
	// ErrTimeout is matched (errors.Is) by a write that blocked longer
	// than the writer's reliability max blocking time.
	ErrTimeout = errors.New("dds: timeout")
)

// Error is a Cyclone DDS return code from an operation.
type Error struct {
	Op   string // what was being done
	Code int32  // DDS_RETCODE_* (negative)
	Name string // Cyclone's name of the code
}

func (e *Error) Error() string {
	return fmt.Sprintf("dds: %s: %s (%d)", e.Op, e.Name, e.Code)
}

// retcodeTimeout is DDS_RETCODE_TIMEOUT.
const retcodeTimeout = -10

// Is makes errors.Is(err, ErrTimeout) true for DDS_RETCODE_TIMEOUT.
func (e *Error) Is(target error) bool { return target == ErrTimeout && e.Code == retcodeTimeout }

package iceoryx

import "errors"

var (
	// ErrNotSupported reports that iceoryx cannot be used here: the
	// binding's library or iox-roudi not found, or a build without the
	// headers or without cgo. It is wrapped with what is missing; tests
	// skip only on it.
	ErrNotSupported = errors.New("iceoryx not available")
	// ErrClosed is returned by the methods of a closed publisher,
	// subscriber or RouDi.
	ErrClosed = errors.New("iceoryx: closed")
	// ErrLoan reports that RouDi had no chunk for a loan (no mempool of
	// that size, or all its chunks in use).
	ErrLoan = errors.New("no iceoryx chunk available")
)

package zerocopy

import (
	"errors"

	"github.com/rmw-rgaps/rmw_rgaps/internal/cuda"
	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

var (
	// ErrInvalid reports a bad argument: a zero or negative size, a bad
	// name, a QoS the engine cannot honour.
	ErrInvalid = errors.New("invalid argument")
	// ErrCorrupt reports a shared-memory segment whose contents are not a
	// valid topic: a bad magic or checksum, impossible sizes, or damage a
	// repair could not undo.
	ErrCorrupt = errors.New("corrupt shared-memory segment")
	// ErrVersion reports a segment written by another layout version.
	ErrVersion = errors.New("unsupported shared-memory layout version")
	// ErrTypeMismatch reports a topic that exists with another message type.
	ErrTypeMismatch = errors.New("topic exists with another type")
	// ErrNoData is returned by a non-blocking take when nothing is queued.
	ErrNoData = errors.New("no message available")
	// ErrTimeout is returned by a wait that reached its timeout.
	ErrTimeout = errors.New("timed out")
	// ErrPoolExhausted reports that the topic's pool has no block of the
	// size asked for (after waiting BlockTimeout for a RELIABLE publisher).
	ErrPoolExhausted = errors.New("topic pool exhausted")
	// ErrQueueFull reports that a reliable KEEP_ALL subscription's queue
	// stayed full for BlockTimeout.
	ErrQueueFull = errors.New("reliable subscription queue full")
	// ErrTooLarge reports a loan larger than the topic's whole pool.
	ErrTooLarge = errors.New("message larger than the topic pool")
	// ErrTooManyLoans reports that an endpoint holds HeldCap samples already.
	ErrTooManyLoans = errors.New("too many outstanding loans or taken samples")
	// ErrTooManyEndpoints reports a topic with MaxEndpoints endpoints already.
	ErrTooManyEndpoints = errors.New("too many endpoints on topic")
	// ErrTooManyNodes reports a domain whose graph segment has a node in
	// every slot (1024 in segments this build makes).
	ErrTooManyNodes = errors.New("too many nodes in the domain")
	// ErrNoSpace reports that /dev/shm had no room for memory a topic
	// needed: a topic or endpoint slot being created, or pool bytes,
	// sample records or allocator metadata a loan or publish needed (then
	// it comes with ErrPoolExhausted). Topics commit their memory as they
	// use it, up to their caps, so this is the limit of /dev/shm, not of a
	// topic. It is package shm's value, so errors.Is works across packages.
	ErrNoSpace = shm.ErrNoSpace
	// ErrUntrusted reports a segment this process refuses to use: another
	// user's (outside the allowed group), a mode wider than Config.Perm,
	// more than one name, or not a regular file. The message names the
	// owner. It is package shm's value.
	ErrUntrusted = shm.ErrUntrusted
	// ErrClosed is returned by every method of a closed object.
	ErrClosed = errors.New("closed")
	// ErrNotSupported reports a feature this machine lacks (no GPU, no VMM
	// support, ...). It is the CUDA loader's value, so errors.Is works across
	// packages.
	ErrNotSupported = cuda.ErrNotSupported
)

package names

import (
	"errors"
	"fmt"
)

// ErrInvalidName is matched (errors.Is) by every *Error returned by this
// package.
var ErrInvalidName = errors.New("names: invalid name")

// Error describes why a name is invalid.
type Error struct {
	// Kind says what the name was checked as: "topic name", "node name",
	// "namespace" or "shm-safe topic name".
	Kind string
	// Name is the name that failed. For ExpandTopicName this may be the
	// expanded name, if only that is invalid.
	Name string
	// Index is the byte offset in Name where the problem was found, with the
	// conventions of the rmw validation functions (e.g. the second '/' of
	// "//", or the last allowed index for a name that is too long).
	Index int
	// Reason is a short lower-case explanation, e.g. "must not contain
	// repeated '/'".
	Reason string
}

// Error returns e.g. `invalid topic name "/a//b": must not contain repeated
// '/' (at index 3)`.
func (e *Error) Error() string {
	return fmt.Sprintf("invalid %s %q: %s (at index %d)", e.Kind, e.Name, e.Reason, e.Index)
}

// Is reports whether target is ErrInvalidName.
func (e *Error) Is(target error) bool { return target == ErrInvalidName }

const (
	kindTopic     = "topic name"
	kindNode      = "node name"
	kindNamespace = "namespace"
	kindShm       = "shm-safe topic name"
)

func newError(kind, name string, index int, format string, args ...any) *Error {
	return &Error{Kind: kind, Name: name, Index: index, Reason: fmt.Sprintf(format, args...)}
}

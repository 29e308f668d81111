package names

import (
	"errors"
	"strings"
)

// MaxShmSafeLength is the longest string ShmSafe returns: a topic name of
// MaxTopicNameLength bytes without its leading '/'. Linux limits a POSIX
// shared-memory object name to NAME_MAX (255) bytes after the leading '/',
// so a caller has 255 - MaxShmSafeLength = 9 bytes left for its own prefix
// or suffix; one that needs more must shorten (e.g. hash) the name instead.
const MaxShmSafeLength = MaxTopicNameLength - 1

// ShmSafe maps a fully qualified topic or service name to a string that can
// be used as part of a POSIX shared-memory object name: the leading '/' is
// dropped and every other '/' becomes '.', e.g. "/ns/chatter" →
// "ns.chatter". The result contains only [A-Za-z0-9_.], is never empty and
// never starts or ends with '.'; it is at most MaxShmSafeLength bytes.
//
// Because ROS 2 names cannot contain '.', the mapping is one-to-one and
// FromShmSafe inverts it. topic must pass ValidateFullTopicName; otherwise
// that error is returned.
func ShmSafe(topic string) (string, error) {
	if err := ValidateFullTopicName(topic); err != nil {
		return "", err
	}
	return strings.ReplaceAll(topic[1:], "/", "."), nil
}

// FromShmSafe inverts ShmSafe: it accepts exactly the strings ShmSafe
// produces and returns the topic name. Anything else gives a *Error of Kind
// "shm-safe topic name" matching ErrInvalidName, with Index pointing into s.
func FromShmSafe(s string) (string, error) {
	if s == "" {
		return "", newError(kindShm, s, 0, "must not be empty")
	}
	for i := range len(s) {
		if c := s[i]; !isAlnum(c) && c != '_' && c != '.' {
			return "", newError(kindShm, s, i, "must contain only alphanumerics, '_' and '.', not %s", quoteByte(c))
		}
	}
	topic := "/" + strings.ReplaceAll(s, ".", "/")
	if err := ValidateFullTopicName(topic); err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return "", err
		}
		// Every index the topic validator reports here is at least 1 (the
		// leading '/' itself is always fine), and topic[i] is s[i-1].
		return "", newError(kindShm, s, max(e.Index-1, 0), "maps to %q, which %s", topic, e.Reason)
	}
	return topic, nil
}

package names

import (
	"fmt"
	"strings"
)

// Length limits, equal to the rmw constants.
const (
	// MaxTopicNameLength is RMW_TOPIC_MAX_NAME_LENGTH: 255 minus 8 bytes that
	// ROS 2 reserves for middleware prefixes such as "rt". It counts the
	// leading '/'.
	MaxTopicNameLength = 255 - 8
	// MaxNamespaceLength is RMW_NAMESPACE_MAX_LENGTH: two less than a topic,
	// leaving room for "/" and a one-character name below the namespace.
	MaxNamespaceLength = MaxTopicNameLength - 2
	// MaxNodeNameLength is RMW_NODE_NAME_MAX_NAME_LENGTH.
	MaxNodeNameLength = 255
)

// quoteByte quotes one byte of a name for an error message, escaping
// anything that is not printable ASCII so a message never contains a partial
// UTF-8 sequence.
func quoteByte(c byte) string {
	switch {
	case c == '\'' || c == '\\':
		return `'\` + string(c) + `'`
	case c >= 0x20 && c < 0x7f:
		return "'" + string(c) + "'"
	}
	return fmt.Sprintf(`'\x%02x'`, c)
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// ValidateFullTopicName checks a fully qualified topic or service name with
// the rules of rmw_validate_full_topic_name, in the same order, so the first
// problem reported is the one ROS 2 reports:
//
//  1. not empty;
//  2. starts with '/';
//  3. does not end with '/' (so "/" alone is invalid);
//  4. only [A-Za-z0-9_/];
//  5. no "//", and no token starting with a digit;
//  6. at most MaxTopicNameLength bytes (checked last, as ROS 2 does, so that
//     a too-long error implies every other rule holds).
//
// Names with tokens starting with '_' are valid (they are hidden, see
// IsHidden). The error is a *Error matching ErrInvalidName.
func ValidateFullTopicName(name string) error {
	if err := validateAbsolute(kindTopic, name); err != nil {
		return err
	}
	if len(name) > MaxTopicNameLength {
		return newError(kindTopic, name, MaxTopicNameLength-1,
			"must not be longer than %d characters", MaxTopicNameLength)
	}
	return nil
}

// validateAbsolute applies rules 1 to 5 of ValidateFullTopicName, which
// namespaces share.
func validateAbsolute(kind, name string) *Error {
	n := len(name)
	if n == 0 {
		return newError(kind, name, 0, "must not be empty")
	}
	if name[0] != '/' {
		return newError(kind, name, 0, "must be absolute (start with '/')")
	}
	if name[n-1] == '/' {
		return newError(kind, name, n-1, "must not end with '/'")
	}
	for i := range n {
		if c := name[i]; !isAlnum(c) && c != '_' && c != '/' {
			return newError(kind, name, i,
				"must contain only alphanumerics, '_' and '/', not %s", quoteByte(c))
		}
	}
	for i := range n - 1 {
		if name[i] != '/' {
			continue
		}
		if name[i+1] == '/' {
			return newError(kind, name, i+1, "must not contain repeated '/'")
		}
		if isDigit(name[i+1]) {
			return newError(kind, name, i+1, "must not have a token that starts with a digit")
		}
	}
	return nil
}

// ValidateNamespace checks a node namespace with the rules of
// rmw_validate_namespace: "/" is valid; anything else must be a valid fully
// qualified topic name of at most MaxNamespaceLength bytes. The error is a
// *Error matching ErrInvalidName.
func ValidateNamespace(namespace string) error {
	if namespace == "/" {
		return nil
	}
	if err := validateAbsolute(kindNamespace, namespace); err != nil {
		return err
	}
	if len(namespace) > MaxNamespaceLength {
		return newError(kindNamespace, namespace, MaxNamespaceLength-1,
			"must not be longer than %d characters", MaxNamespaceLength)
	}
	return nil
}

// ValidateNodeName checks a node name with the rules of
// rmw_validate_node_name, in the same order: not empty, only [A-Za-z0-9_],
// not starting with a digit, at most MaxNodeNameLength bytes. The error is a
// *Error matching ErrInvalidName.
func ValidateNodeName(name string) error {
	if name == "" {
		return newError(kindNode, name, 0, "must not be empty")
	}
	for i := range len(name) {
		if c := name[i]; !isAlnum(c) && c != '_' {
			return newError(kindNode, name, i, "must contain only alphanumerics and '_', not %s", quoteByte(c))
		}
	}
	if isDigit(name[0]) {
		return newError(kindNode, name, 0, "must not start with a digit")
	}
	if len(name) > MaxNodeNameLength {
		return newError(kindNode, name, MaxNodeNameLength-1,
			"must not be longer than %d characters", MaxNodeNameLength)
	}
	return nil
}

// ValidateTopicName checks a topic or service name as written by a user,
// before expansion, with the rules of rcl_validate_topic_name: the name may
// be relative ("chatter"), private ("~/chatter", or "~" alone) and may
// contain substitutions ("{node}/chatter"). The rules, in order:
//
//   - not empty, not starting with a digit, not ending with '/';
//   - only [A-Za-z0-9_/~{}]; '~' only as the first character; braces
//     balanced and not nested; a substitution contains only [A-Za-z0-9_] and
//     does not start with a digit;
//   - '~' followed by '/' if anything follows it; no token after a '/'
//     starting with a digit.
//
// Like rcl, it does not check for "//", empty substitutions or length: those
// are caught when the expanded name is validated (see ExpandTopicName). The
// error is a *Error matching ErrInvalidName.
func ValidateTopicName(name string) error {
	n := len(name)
	if n == 0 {
		return newError(kindTopic, name, 0, "must not be empty")
	}
	if isDigit(name[0]) {
		return newError(kindTopic, name, 0, "must not have a token that starts with a digit")
	}
	if name[n-1] == '/' {
		return newError(kindTopic, name, n-1, "must not end with '/'")
	}
	inBrace, open := false, 0
	for i := range n {
		c := name[i]
		switch {
		case isAlnum(c):
			if isDigit(c) && inBrace && i == open+1 {
				return newError(kindTopic, name, i, "substitution must not start with a digit")
			}
		case c == '_':
		case c == '/':
			if inBrace {
				return newError(kindTopic, name, i, "substitution must contain only alphanumerics and '_', not '/'")
			}
		case c == '~':
			if i != 0 {
				return newError(kindTopic, name, i, "must not contain '~' except as the first character")
			}
		case c == '{':
			if inBrace {
				return newError(kindTopic, name, i, "substitutions must not be nested")
			}
			inBrace, open = true, i
		case c == '}':
			if !inBrace {
				return newError(kindTopic, name, i, "must not contain unmatched '}'")
			}
			inBrace = false
		default:
			if inBrace {
				return newError(kindTopic, name, i, "substitution must contain only alphanumerics and '_', not %s", quoteByte(c))
			}
			return newError(kindTopic, name, i,
				"must contain only alphanumerics, '_', '/', '~', '{' and '}', not %s", quoteByte(c))
		}
	}
	if inBrace {
		return newError(kindTopic, name, open, "must not contain unmatched '{'")
	}
	// rcl skips this check for a two-character name, so it lets "~a" through
	// (and expands it to "/ns/nodea"); that is an accident, not a rule.
	if n > 1 && name[0] == '~' && name[1] != '/' {
		return newError(kindTopic, name, 1, "'~' must be followed by '/'")
	}
	for i := range n - 1 {
		if name[i] == '/' && isDigit(name[i+1]) {
			return newError(kindTopic, name, i+1, "must not have a token that starts with a digit")
		}
	}
	return nil
}

// IsHidden reports whether a topic or service name is hidden by ROS 2
// convention, i.e. whether any of its '/'-separated tokens starts with '_'
// (e.g. "/_internal/x" or "/a/_b"). Hidden names are valid; tools merely
// omit them by default. The name is not validated.
func IsHidden(name string) bool {
	for tok := range strings.SplitSeq(name, "/") {
		if strings.HasPrefix(tok, "_") {
			return true
		}
	}
	return false
}

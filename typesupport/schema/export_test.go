package schema

// CSize returns the C memory size (sizeof) PlainSize assumes for m, for
// the tests that compare it with the compiler's.
func CSize(m *Message) (int, bool) {
	l, ok := layouts{}.of(m, 0)
	if !ok {
		return 0, false
	}
	return l.size, true
}

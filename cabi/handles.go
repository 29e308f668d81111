package cabi

import "sync"

// Handles maps the integers C holds to Go values. Unlike cgo.Handle, a
// stale, foreign or zero integer is reported (ok false), never a panic, and
// a value is found only under the key it was put with.
//
// A table hands out its own keys (Put: 1, 2, ...) or files values under
// keys the caller chose (PutAt: e.g. the address of the C struct that
// stands for the value, so that a handle is checked before C memory is
// read through it). One table uses one or the other.
//
// The zero Handles is empty and ready; it must not be copied after first
// use. All methods are safe for concurrent use.
type Handles struct {
	mu   sync.RWMutex
	next uintptr
	objs map[uintptr]any
}

// Put files v under a new non-zero key and returns the key.
func (t *Handles) Put(v any) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.objs == nil {
		t.objs = map[uintptr]any{}
	}
	t.next++
	t.objs[t.next] = v
	return t.next
}

// PutAt files v under key, which must be non-zero and not in use; it
// reports whether it did.
func (t *Handles) PutAt(key uintptr, v any) bool {
	if key == 0 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.objs == nil {
		t.objs = map[uintptr]any{}
	}
	if _, taken := t.objs[key]; taken {
		return false
	}
	t.objs[key] = v
	return true
}

// Get returns the value filed under key when it is a T.
func Get[T any](t *Handles, key uintptr) (T, bool) {
	t.mu.RLock()
	v, ok := t.objs[key].(T)
	t.mu.RUnlock()
	return v, ok
}

// Take removes and returns the value filed under key when it is a T; a
// value of another type stays. Of two concurrent Takes of one key, one
// gets the value.
func Take[T any](t *Handles, key uintptr) (T, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.objs[key].(T)
	if ok {
		delete(t.objs, key)
	}
	return v, ok
}

// Drop forgets key, whatever it holds (nothing when it holds nothing).
func (t *Handles) Drop(key uintptr) {
	t.mu.Lock()
	delete(t.objs, key)
	t.mu.Unlock()
}

// Len is the number of live handles.
func (t *Handles) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.objs)
}

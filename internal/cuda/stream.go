package cuda

import (
	"errors"
	"sync"
	"time"
)

// Stream is a CUDA stream: work queued on it runs in order. Streams are
// created blocking (CU_STREAM_DEFAULT): they wait for earlier work on the
// legacy default stream, which the synchronous copies, MemsetD8 and
// Checksum use, so mixing those with streams needs no extra
// synchronisation. A nil *Stream means the legacy default stream.
type Stream struct {
	dev *Device
	mu  sync.Mutex // guards h
	h   uintptr    // 0 after Destroy
}

// NewStream creates a stream in d's context.
func (d *Device) NewStream() (s *Stream, err error) { return d.newStream(0) }

// streamNonBlocking is CU_STREAM_NON_BLOCKING.
const streamNonBlocking = 1

// NewNonBlockingStream creates a stream that does not synchronise with the
// legacy default stream (CU_STREAM_NON_BLOCKING): its work neither waits
// for the synchronous copies, MemsetD8 and Checksum of this context nor
// holds them up. It is for a user whose copies must depend on nothing but
// its own earlier work, and it must order itself against anything else
// (events).
func (d *Device) NewNonBlockingStream() (s *Stream, err error) { return d.newStream(streamNonBlocking) }

func (d *Device) newStream(flags uint32) (s *Stream, err error) {
	err = d.call(func(ctx uintptr) error {
		h, err := cuStreamCreate(ctx, flags)
		if err != nil {
			return err
		}
		track(resStream, 1)
		s = &Stream{dev: d, h: h}
		return nil
	})
	return s, err
}

func (s *Stream) handle() uintptr {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

// Handle is s's raw CUstream (0 for nil, the legacy default stream, and
// after Destroy), for APIs that take a stream from the application.
func (s *Stream) Handle() uintptr { return s.handle() }

// Synchronize waits until all work queued on s has finished.
func (s *Stream) Synchronize() error {
	if s == nil {
		return nil
	}
	return s.dev.call(func(ctx uintptr) error { return cuStreamSynchronize(ctx, s.handle()) })
}

// Destroy releases s (work already queued still runs). Later uses of s are
// errors from the driver; a second Destroy does nothing.
func (s *Stream) Destroy() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h == 0 {
		return nil
	}
	return s.dev.call(func(ctx uintptr) error {
		if err := cuStreamDestroy(ctx, s.h); err != nil {
			return err
		}
		s.h = 0
		track(resStream, -1)
		return nil
	})
}

// Event marks a point in a stream, for waiting and timing.
type Event struct {
	dev *Device
	mu  sync.Mutex // guards h
	h   uintptr    // 0 after Destroy
}

// NewEvent creates an event with timing enabled.
func (d *Device) NewEvent() (e *Event, err error) {
	err = d.call(func(ctx uintptr) error {
		h, err := cuEventCreate(ctx, 0)
		if err != nil {
			return err
		}
		track(resEvent, 1)
		e = &Event{dev: d, h: h}
		return nil
	})
	return e, err
}

// eventDisableTiming is CU_EVENT_DISABLE_TIMING.
const eventDisableTiming = 2

// NewSyncEvent creates an event without timing (CU_EVENT_DISABLE_TIMING),
// the cheapest to record and wait for: for ordering, not measuring.
func (d *Device) NewSyncEvent() (e *Event, err error) {
	err = d.call(func(ctx uintptr) error {
		h, err := cuEventCreate(ctx, eventDisableTiming)
		if err != nil {
			return err
		}
		track(resEvent, 1)
		e = &Event{dev: d, h: h}
		return nil
	})
	return e, err
}

func (e *Event) handle() uintptr {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.h
}

// Record queues the event on s (nil: the legacy default stream); it
// completes when the work queued on s before it has.
func (e *Event) Record(s *Stream) error {
	return e.dev.call(func(ctx uintptr) error { return cuEventRecord(ctx, e.handle(), s.handle()) })
}

// RecordOnHandle queues the event on a raw CUstream handle of d's
// context that this package did not create (an application's stream; 0:
// the legacy default stream). The handle is only used, never destroyed.
func (e *Event) RecordOnHandle(stream uintptr) error {
	return e.dev.call(func(ctx uintptr) error { return cuEventRecord(ctx, e.handle(), stream) })
}

// Synchronize waits until the event has completed.
func (e *Event) Synchronize() error {
	return e.dev.call(func(ctx uintptr) error { return cuEventSynchronize(ctx, e.handle()) })
}

// StreamIdle reports whether all work queued so far on a raw CUstream
// handle of d's context (an application's stream; 0: the legacy default
// stream) is done, without waiting (cuStreamQuery).
func (d *Device) StreamIdle(stream uintptr) (bool, error) {
	err := d.call(func(ctx uintptr) error { return cuStreamQuery(ctx, stream) })
	var ce *Error
	if errors.As(err, &ce) && ce.Code == CodeNotReady {
		return false, nil
	}
	return err == nil, err
}

// Done reports whether the event has completed, without waiting.
func (e *Event) Done() (bool, error) {
	err := e.dev.call(func(ctx uintptr) error { return cuEventQuery(ctx, e.handle()) })
	var ce *Error
	if errors.As(err, &ce) && ce.Code == CodeNotReady {
		return false, nil
	}
	return err == nil, err
}

// Elapsed is the GPU time between two completed events (resolution about
// half a microsecond). It fails with CodeNotReady while either is pending.
func Elapsed(start, end *Event) (time.Duration, error) {
	var ms float32
	err := start.dev.call(func(ctx uintptr) error {
		var err error
		ms, err = cuEventElapsedTime(ctx, start.handle(), end.handle())
		return err
	})
	return time.Duration(float64(ms) * float64(time.Millisecond)), err
}

// Destroy releases the event; a second Destroy does nothing.
func (e *Event) Destroy() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h == 0 {
		return nil
	}
	return e.dev.call(func(ctx uintptr) error {
		if err := cuEventDestroy(ctx, e.h); err != nil {
			return err
		}
		e.h = 0
		track(resEvent, -1)
		return nil
	})
}

package zerocopy

import "github.com/rmw-rgaps/rmw_rgaps/internal/cuda"

// WritesOn declares that the device writes into the loan (kernels given
// DevicePtr, asynchronous copies) were queued on stream: a raw CUstream of
// this process's primary context of Config.Device, 0 for the legacy
// default stream. Publish and PublishAs then wait for that stream alone
// (nothing if it is idle, else an event recorded on it), instead of the
// whole context (cuCtxSynchronize), even if DevicePtr was handed out. The writes must
// all be queued on it before Publish. Synchronous and device-to-device
// copies into the loan (Loan.CopyIn of a device loan, PublishFrom) still
// synchronise the context. Without a GPU it does nothing.
func (l *Loan) WritesOn(stream uintptr) { l.stream, l.onStream = stream, true }

// waitDevice waits for the device writes into the loan that no copier
// completion covers (Publish): an event on the writer's stream
// (WritesOn), the context for writes on unknown streams and for
// synchronous copies.
func (l *Loan) waitDevice() error {
	if !l.untracked && !l.syncCopy && !l.onStream {
		return nil
	}
	d := l.p.t.d
	dev, err := d.gpu()
	if err != nil {
		return nil // no GPU: nothing was written by a device
	}
	if l.onStream {
		if err := d.waitStream(dev, l.stream); err != nil {
			return err
		}
	}
	if l.syncCopy || (l.untracked && !l.onStream) {
		return dev.CtxSynchronize()
	}
	return nil
}

// waitStream waits until the work queued on the application's stream so
// far is done, and for nothing else: at once if the stream is idle already
// (cuStreamQuery, the usual case of a frame finished before its publish),
// else by an event recorded on it (cuEventSynchronize). Events are kept
// for reuse.
func (d *Domain) waitStream(dev *cuda.Device, stream uintptr) error {
	if idle, err := dev.StreamIdle(stream); err == nil && idle {
		return nil
	}
	d.gpuMu.Lock()
	var ev *cuda.Event
	if n := len(d.streamEvents); n > 0 {
		ev, d.streamEvents = d.streamEvents[n-1], d.streamEvents[:n-1]
	}
	d.gpuMu.Unlock()
	if ev == nil {
		var err error
		if ev, err = dev.NewSyncEvent(); err != nil {
			return err
		}
	}
	err := ev.RecordOnHandle(stream)
	if err == nil {
		err = ev.Synchronize()
	}
	if err != nil {
		ev.Destroy() // its state is unknown
		return err
	}
	d.gpuMu.Lock()
	defer d.gpuMu.Unlock()
	if d.closed.Load() {
		return ev.Destroy()
	}
	d.streamEvents = append(d.streamEvents, ev)
	return nil
}

// closeStreamEvents destroys the events kept by waitStream (Domain.Close).
func (d *Domain) closeStreamEvents() {
	d.gpuMu.Lock()
	evs := d.streamEvents
	d.streamEvents = nil
	d.gpuMu.Unlock()
	for _, ev := range evs {
		ev.Destroy()
	}
}

package zerocopy

import "time"

// PublishTrace receives, from Loan.PublishTraced, when each stage of one
// publish ended, measured from the start of the call: for benchmarks and
// diagnostics that need to know where a publish's time goes (each stage
// costs a clock read; Publish reads none of them).
type PublishTrace struct {
	// Writes: the device writes into the loan were waited for (its
	// copiers' completions; the stream or the context it was written on).
	Writes time.Duration
	// Forms: the forms matched readers need were made. On a GPU topic
	// with GPU readers, a host loan's block was copied into the GPU pool:
	// the topic lock taken once to allocate the device block, the
	// host-to-device copy and the wait for it. Writes when nothing was
	// copied.
	Forms time.Duration
	// Locked: the topic lock was taken to queue the sample.
	Locked time.Duration
	// Queued: the sample is in every matched queue and the lock released.
	Queued time.Duration
	// Woken: the wake-up system call returned; Queued when nobody slept
	// (then no call is made).
	Woken time.Duration
	// Readers is the number of subscription queues the sample went to;
	// Slept reports that subscribers were blocked, so the call was made.
	Readers int
	Slept   bool

	start time.Time
}

// PublishTraced is Publish, recording in tr when each of its stages ended
// (PublishTrace).
func (l *Loan) PublishTraced(tr *PublishTrace) error {
	*tr = PublishTrace{start: time.Now()}
	l.trace = tr
	return l.Publish()
}

// mark records in *at the time since the traced call started; nothing for
// an untraced publish (tr nil).
func (tr *PublishTrace) mark(at *time.Duration) {
	if tr != nil {
		*at = time.Since(tr.start)
	}
}

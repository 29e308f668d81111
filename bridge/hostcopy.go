package bridge

import (
	"sync"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Host copies of the reader role (subplace.go).
//
// A record's payload is copied from the ring into its message's host
// loan by the link's copy workers, not by the link's goroutine: the
// goroutine goes on taking the next records (and publishing complete
// messages) while the bytes move, and a large record is cut into pieces
// that several workers copy at once, so that the copy keeps up with
// several rails (one goroutine copies at about the speed of one TCP
// connection). Records are consumed in ring order once their copies are
// done (finish), so the ring bytes stay until their copy is over. A
// copy below hostCopyMin is made at once by the link's goroutine (handing
// it over costs a goroutine's wake, more than copying that much).
//
// Workers: one per rail, so that the copies keep up with the rails (one
// goroutine copies from the ring into a pool block that is not in the
// cache at about the speed of one TCP connection).
const (
	hostCopyMin   = 256 << 10
	hostCopyPiece = 256 << 10 // a piece is at least this long
)

// hostCopy is one record's copy: done when every piece is.
type hostCopy struct {
	mu   sync.Mutex
	left int
	err  error
	end  chan struct{} // closed when left reaches 0
}

// done reports whether the copy is over; with wait it waits for that.
func (c *hostCopy) done(wait bool) bool {
	if wait {
		<-c.end
		return true
	}
	select {
	case <-c.end:
		return true
	default:
		return false
	}
}

// finish records a piece's end; it reports whether it was the last.
func (c *hostCopy) finish(err error) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		c.err = err
	}
	if c.left--; c.left == 0 {
		close(c.end)
		return true
	}
	return false
}

// copyJob is one piece: src into loan at off.
type copyJob struct {
	loan *zerocopy.Loan
	off  uint64
	src  []byte
	c    *hostCopy
}

// copyWorkers are a reader link's copy goroutines.
type copyWorkers struct {
	jobs chan copyJob
	wg   sync.WaitGroup
	n    int
}

// newCopyWorkers starts n workers; done is called after each record's
// copy is over (it wakes the link).
func newCopyWorkers(n int, done func()) *copyWorkers {
	w := &copyWorkers{jobs: make(chan copyJob, 16*n), n: n}
	for range n {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			for j := range w.jobs {
				if j.c.finish(j.loan.CopyIn(int(j.off), j.src)) {
					done()
				}
			}
		}()
	}
	return w
}

// stop ends the workers once every queued piece is copied.
func (w *copyWorkers) stop() {
	close(w.jobs)
	w.wg.Wait()
}

// copyHost queues the copy of src into ln at off on the link's workers
// (started on first need, one per rail).
func (l *readerLink) copyHost(ln *zerocopy.Loan, off uint64, src []byte) *hostCopy {
	if l.workers == nil {
		l.workers = newCopyWorkers(max(1, l.cfg.Rails), func() {
			if r := l.railsNow.Load(); r != nil {
				r.event()
			}
		})
	}
	n := min(l.workers.n, max(1, len(src)/hostCopyPiece))
	piece := (len(src) + n - 1) / n
	c := &hostCopy{left: (len(src) + piece - 1) / piece, end: make(chan struct{})}
	for i := 0; i < len(src); i += piece {
		end := min(i+piece, len(src))
		l.workers.jobs <- copyJob{loan: ln, off: off + uint64(i), src: src[i:end], c: c}
	}
	return c
}

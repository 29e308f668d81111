package benche2e

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line bar ("\r" redraws) with the current step and
// an estimate of the time left. A nil writer draws nothing.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	total int
	done  int
	label string
	start time.Time
	last  time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: max(total, 1), start: time.Now()}
}

func (p *progress) show(label string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.label = label
	p.drawLocked(false)
}

func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+n, p.total)
	p.drawLocked(false)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.w != nil {
		p.label = "done"
		p.drawLocked(true)
		fmt.Fprintln(p.w)
	}
}

// drawLocked redraws at most ten times a second (always when forced).
func (p *progress) drawLocked(force bool) {
	if p.w == nil || (!force && time.Since(p.last) < 100*time.Millisecond) {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := width * p.done / p.total
	eta := "?"
	if p.done > 0 {
		el := time.Since(p.start)
		eta = (el*time.Duration(p.total)/time.Duration(p.done) - el).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r[%s%s] %3d%% %d/%d rounds, %s left  %-32s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		100*p.done/p.total, p.done, p.total, eta, p.label)
}

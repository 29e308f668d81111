package benchbridge

import (
	"fmt"
	"io"
	"time"
)

// progress writes one line per step on stderr: "[3/26 0:12] label". A nil
// writer writes nothing.
type progress struct {
	w     io.Writer
	total int
	done  int
	start time.Time
}

func (p *progress) step(label string) {
	if p.w == nil {
		return
	}
	p.done++
	el := time.Since(p.start).Round(time.Second)
	fmt.Fprintf(p.w, "bench bridge [%d/%d %d:%02d] %s\n", p.done, p.total, int(el.Minutes()), int(el.Seconds())%60, label)
}

func (p *progress) finish() {
	if p.w == nil {
		return
	}
	fmt.Fprintf(p.w, "bench bridge: done in %v\n", time.Since(p.start).Round(100*time.Millisecond))
}

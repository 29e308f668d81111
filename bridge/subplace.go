package bridge

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/ring"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Placing records (the reader role, sublink.go): each received record's
// payload goes into its message's loan as it comes, its copy running
// beside the link's goroutine; records are consumed in ring order once
// their copies are done, and a message is published before its last
// record is consumed.

// placing is a record being placed into the local pool: consumed (Head
// passes it) only once its copy is done, in ring order.
type placing struct {
	rec  ring.Record
	dup  bool
	t    *inTopic
	c    *zerocopy.Completion // the asynchronous host-to-device copy; nil: none
	hc   *hostCopy            // the host copy on the link's copy workers; nil: none
	last bool                 // completes its message
	size uint64               // the message's size, when last
	loan *zerocopy.Loan
	meta []byte // the message's meta, when last (nil: none)
	drop bool   // the message is dropped (no loan)
}

// deliver starts placing one record: a host loan gets a copy on the
// link's copy workers (hostcopy.go; a small one here), a device loan an
// asynchronous host-to-device copy on the link's engine copier, so the
// link keeps taking the next records meanwhile (finish consumes them when
// their copies completed). It returns false (nothing
// started) when the record's topic is not known yet: the topic map travels
// on the control connection and may come after the data.
func (l *readerLink) deliver(rec *ring.Record) (bool, error) {
	if rec.Dup {
		l.stats.Dups.Add(1)
		l.placing = append(l.placing, placing{rec: *rec, dup: true})
		return true, nil
	}
	t := l.topics[rec.Topic]
	if t == nil {
		l.mb.mu.Lock()
		m, ok := l.mb.maps[rec.Topic]
		l.mb.mu.Unlock()
		if !ok || m.WriterEpoch != l.writerEpoch {
			return false, nil // the map of this writer's id is on its way
		}
		t = l.topic(&m)
		l.topics[rec.Topic] = t
	}
	off, done, err := l.asm.Add(rec)
	if err != nil {
		return false, err
	}
	if rec.Chunk == 0 {
		t.dropping, t.prefix, t.meta = false, 0, nil
		if t.loan != nil { // cannot happen with a valid stream: Assembler refuses it
			t.loan.Discard()
			t.loan = nil
		}
		size, err := l.startMeta(t, rec)
		switch {
		case err != nil:
			l.b.refusals.Log(slog.LevelWarn, "bad meta in a message from another host: dropped", "peer", l.host, "topic", t.name, "err", err)
			t.dropping = true
		case t.pub == nil:
			t.dropping = true
		default:
			if ln, err := l.loan(t, size); err != nil {
				l.b.log.Warn("no room for a message from another host: dropped", "topic", t.name, "size", size, "err", err)
				t.dropping = true
			} else {
				t.loan = ln
			}
		}
	}
	p := placing{rec: *rec, t: t, last: done, drop: t.dropping}
	if done && off+rec.PayloadLen > t.prefix {
		p.size = off + rec.PayloadLen - t.prefix
	}
	if !t.dropping {
		src := l.r.Payload(rec)
		t.gatherMeta(off, src)
		if doff, data := payloadPart(off, t.prefix, src); len(data) > 0 {
			if t.loan.OnDevice() {
				if err := l.copyAsync(t.loan, doff, data, &p); err != nil {
					return false, fmt.Errorf("topic %s: placing a message on the GPU: %w", t.name, err)
				}
			} else if len(data) >= hostCopyMin {
				p.hc = l.copyHost(t.loan, doff, data)
			} else if err := t.loan.CopyIn(int(doff), data); err != nil {
				return false, fmt.Errorf("topic %s: placing a message: %w", t.name, err)
			}
		}
	}
	if done {
		p.loan, p.meta, t.loan, t.meta, t.dropping = t.loan, t.meta, nil, nil, false
	}
	l.placing = append(l.placing, p)
	return true, nil
}

// copyAsync queues the copy of src (ring memory, pinned when there is a
// GPU) to the device loan at off on the link's copier. The loan keeps the
// completion too: publishing it waits for its own copies, not for the
// other links'.
func (l *readerLink) copyAsync(ln *zerocopy.Loan, off uint64, src []byte, p *placing) error {
	if l.cp == nil {
		cp, err := l.b.dom.NewCopier()
		if err != nil {
			return err
		}
		l.cp = cp
	}
	c, err := l.cp.CopyIn(ln, int(off), src)
	if err != nil {
		return err
	}
	p.c = c
	return nil
}

// finish consumes, in ring order, the records whose copies completed, and
// publishes the messages they complete. The last record of a message is
// consumed only after the message is published: a daemon killed in
// between makes the writer send it again rather than lose it. wait: wait
// for copies still running (link failure, shutdown).
func (l *readerLink) finish(wait bool) error {
	k := 0
	for ; k < len(l.placing); k++ {
		p := &l.placing[k]
		if p.c != nil {
			if !p.c.Done() && !wait {
				break
			}
			if err := p.c.Wait(); err != nil {
				return err
			}
			p.c = nil
		}
		if p.hc != nil {
			if !p.hc.done(wait) {
				break
			}
			err := p.hc.err
			p.hc = nil
			if err != nil {
				return fmt.Errorf("topic %s: placing a message: %w", p.t.name, err)
			}
		}
		if p.last {
			l.publish(p)
		}
		if err := l.consume(&p.rec); err != nil {
			// Consumed (the error is the head write-back's, on a link
			// that failed): it must not be consumed again.
			l.placing = append(l.placing[:0], l.placing[k+1:]...)
			return err
		}
	}
	l.placing = append(l.placing[:0], l.placing[k:]...)
	return nil
}

// publish publishes a placed message (or counts it dropped).
func (l *readerLink) publish(p *placing) {
	if p.drop || p.loan == nil {
		l.stats.Dropped.Add(1)
		return
	}
	ln := p.loan
	p.loan = nil
	if err := ln.Shrink(int(p.size)); err != nil {
		ln.Discard()
		l.stats.Dropped.Add(1)
		l.b.log.Warn("placing a message from another host", "topic", p.t.name, "err", err)
		return
	}
	if p.meta != nil {
		if err := ln.SetMeta(p.meta); err != nil {
			ln.Discard()
			l.stats.Dropped.Add(1)
			l.b.refusals.Log(slog.LevelWarn, "placing the meta of a message from another host", "peer", l.host, "topic", p.t.name, "err", err)
			return
		}
	}
	if err := ln.PublishAs(zerocopy.Origin{Timestamp: time.Unix(0, p.rec.Timestamp), GID: zerocopy.GID(p.rec.GID)}); err != nil {
		l.stats.Dropped.Add(1)
		l.b.log.Warn("publishing a message from another host", "topic", p.t.name, "err", err)
		return
	}
	l.stats.Messages.Add(1)
	l.stats.Bytes.Add(p.size)
}

func (l *readerLink) consume(rec *ring.Record) error {
	wb, err := l.r.Consume(rec)
	if err != nil {
		return err
	}
	l.stats.Records.Add(1)
	if wb {
		l.wbPending = true
		if l.state == linkUp { // else the next offer carries the Head
			return l.writeBack()
		}
	}
	return nil
}

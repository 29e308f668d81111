package gateway

import (
	"errors"
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/typesupport/schema"
	"github.com/rmw-rgaps/rmw_rgaps/zerocopy"
)

// Split messages (docs/ARCHITECTURE.md §3.12, §3.13): a message published
// with a device loan is a sample whose payload is its byte field's bytes
// (host and/or device form) and whose meta block holds the rest. DDS
// carries whole messages, so the gateway joins them going out and splits
// them coming in.

// Why a message was not carried; each is logged once per mirror.
var (
	errMalformed    = errors.New("malformed message")
	errNoDefinition = errors.New("a split message of a type whose definition is unknown")
	errStage        = errors.New("copying the payload out of device memory failed")
)

// errKey is the kind of a forwarding failure, for warnOnce.
func errKey(err error) string {
	for _, e := range []error{errMalformed, errNoDefinition, errStage} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "write"
}

// writeSplit writes a split message to DDS as the whole message's CDR,
// byte for byte what the rmw writes for it unsplit: the fields before the
// byte field and its count (head), the field's bytes, the fields after it
// (tail), copied once, by the writer, into the DDS sample.
func (m *outMirror) writeSplit(s *zerocopy.Sample, meta []byte) error {
	if m.def == nil {
		return fmt.Errorf("%w (%s)", errNoDefinition, m.w.typ)
	}
	field, rest, err := schema.ParseMeta(meta)
	if err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	head, tail, err := schema.Attach(m.def, field, rest, s.Size())
	if err != nil {
		return fmt.Errorf("%w: %v", errMalformed, err)
	}
	data, err := m.hostBytes(s)
	if err != nil {
		return err
	}
	return m.wr.WriteParts(head, data, tail)
}

// hostBytes is the sample's payload in host memory: its host form where it
// has one (made by its publisher for host readers), else one device-to-host
// copy of its device form into the mirror's buffer (the only copy of it
// this host makes for DDS, whatever the number of DDS readers).
func (m *outMirror) hostBytes(s *zerocopy.Sample) ([]byte, error) {
	if b := s.Bytes(); b != nil {
		return b, nil
	}
	dst, err := m.buf.get(s.Size())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStage, err)
	}
	cp, err := m.buf.copier()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStage, err)
	}
	x, err := cp.StageOut(dst, s, 0)
	if err == nil {
		err = x.Wait()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errStage, err)
	}
	return dst, nil
}

// Why a DDS message of a type with a byte field was not split: it is
// published whole then (the ordinary host path).
var (
	errNoSplit    = errors.New("not split")
	errEmptyField = fmt.Errorf("%w: its byte field is empty", errNoSplit) // quietly: nothing to place
)

// formsPeriod is how long the forms the readers of a topic read are
// taken as known before the graph is read again.
const formsPeriod = 200 * time.Millisecond

// readerForms counts the subscriptions an in-mirror's publisher serves by
// the form they read (republishing ones never take from it, MemoryAny ones
// take either), as last read from the graph.
type readerForms struct {
	at        time.Time
	dev, host int
}

// readForms returns the topic's reader counts, re-reading the graph at
// most every formsPeriod.
func (m *inMirror) readForms() readerForms {
	if time.Since(m.forms.at) < formsPeriod {
		return m.forms
	}
	f := readerForms{at: time.Now()}
	if eps, err := m.dom.Endpoints(m.name); err == nil {
		for _, ep := range eps {
			if ep.Kind != zerocopy.KindSubscription || ep.Republish {
				continue
			}
			switch ep.Memory {
			case zerocopy.MemoryGPU:
				f.dev++
			case zerocopy.MemoryHost:
				f.host++
			}
		}
	}
	m.forms = f
	return f
}

// splits reports whether the mirror publishes messages split: on a topic
// with a GPU pool always (its device readers, now or later, find the
// field's bytes in a block of their own), on a host topic while a device
// subscription reads it (its view is then the field's bytes alone).
func (m *inMirror) splits() bool {
	return m.pub.Topic().PoolKind() == zerocopy.PoolGPU || m.readForms().dev > 0
}

// publishSplit publishes msg, the CDR of a whole message, split: the byte
// field's bytes placed once into a block of the topic's pool, the rest as
// the meta block (RGDM v1). The block is in device memory when the pool is
// on the GPU and device subscriptions alone read the topic (one
// host-to-device copy, by the mirror's copier, from the buffer the message
// was taken into); otherwise it is a host block (a copy into shared
// memory), of which the engine makes the device form for device readers
// (one host-to-device copy) while host readers read it in place. An error
// wrapping errNoSplit says the message is to be published whole.
func (m *inMirror) publishSplit(msg []byte) error {
	rest, data, err := schema.Detach(m.def, m.field, msg)
	if err != nil {
		return fmt.Errorf("%w: %v", errNoSplit, err)
	}
	if len(data) == 0 {
		return errEmptyField
	}
	meta := append(schema.AppendMetaHeader(make([]byte, 0, schema.MetaHeaderSize+len(rest)), m.field), rest...)
	if len(meta) > zerocopy.MaxMeta {
		return fmt.Errorf("%w: its other fields take %d bytes, more than a meta block holds (%d)", errNoSplit, len(meta), zerocopy.MaxMeta)
	}
	l, err := m.loan(len(data))
	if err != nil {
		return fmt.Errorf("%w: no block for its byte field: %v", errNoSplit, err)
	}
	if err := m.fill(l, data); err != nil {
		l.Discard()
		return fmt.Errorf("%w: copying its byte field: %v", errNoSplit, err)
	}
	if err := l.SetMeta(meta); err != nil {
		l.Discard()
		return fmt.Errorf("%w: attaching its other fields: %v", errNoSplit, err)
	}
	return l.Publish()
}

// loan lends n bytes for a split message's byte field: device memory when
// the pool is on the GPU and only device subscriptions read the topic,
// else (or without a GPU) a host block.
func (m *inMirror) loan(n int) (*zerocopy.Loan, error) {
	if f := m.readForms(); m.pub.Topic().PoolKind() == zerocopy.PoolGPU && f.dev > 0 && f.host == 0 {
		l, err := m.pub.LoanDevice(n)
		if !errors.Is(err, zerocopy.ErrNotSupported) {
			return l, err
		}
	}
	return m.pub.Loan(n)
}

// fill copies data, which lies in the mirror's buffer, into the loan: a
// plain copy into a host block, a host-to-device copy on the mirror's
// copier into a device one (Publish waits for that copy alone).
func (m *inMirror) fill(l *zerocopy.Loan, data []byte) error {
	if !l.OnDevice() {
		copy(l.Bytes(), data)
		return nil
	}
	cp, err := m.buf.copier()
	if err != nil {
		return err
	}
	_, err = cp.CopyIn(l, 0, data)
	return err
}

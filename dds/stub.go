//go:build !cgo || nodds

package dds

import (
	"fmt"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/zerocopy/qos"
)

var errNoDDS = fmt.Errorf("%w: rgaps was built without cgo or with the nodds tag", ErrNotSupported)

// Available reports whether this build has the Cyclone DDS binding.
func Available() bool { return false }

func Load() error        { return errNoDDS }
func LoadedFrom() string { return "" }

type Participant struct{}

func Open(cfg Config) (*Participant, error)                           { return nil, errNoDDS }
func (p *Participant) GUID() GUID                                     { return GUID{} }
func (p *Participant) Domain() uint32                                 { return 0 }
func (p *Participant) Close() error                                   { return ErrClosed }
func (p *Participant) Topic(rosTopic, rosType string) (*Topic, error) { return nil, errNoDDS }
func (p *Participant) RawTopic(name, typ string) (*Topic, error)      { return nil, errNoDDS }
func (p *Participant) Endpoints() ([]Endpoint, error)                 { return nil, errNoDDS }

type Topic struct{}

func (t *Topic) Name() string                                 { return "" }
func (t *Topic) TypeName() string                             { return "" }
func (t *Topic) NewWriter(o EndpointOptions) (*Writer, error) { return nil, errNoDDS }
func (t *Topic) NewReader(o EndpointOptions) (*Reader, error) { return nil, errNoDDS }

type Writer struct{}

func (w *Writer) GUID() GUID                               { return GUID{} }
func (w *Writer) Topic() *Topic                            { return nil }
func (w *Writer) Write(msg []byte) error                   { return errNoDDS }
func (w *Writer) WriteAt(msg []byte, at time.Time) error   { return errNoDDS }
func (w *Writer) WriteParts(head, body, tail []byte) error { return errNoDDS }
func (w *Writer) Matched() (int, error)                    { return 0, errNoDDS }
func (w *Writer) Incompatible() (Incompatible, error)      { return Incompatible{}, errNoDDS }
func (w *Writer) WaitForAcks(time.Duration) (bool, error)  { return false, errNoDDS }
func (w *Writer) QoS() (qos.Profile, []byte, error)        { return qos.Profile{}, nil, errNoDDS }
func (w *Writer) Close() error                             { return ErrClosed }

type Reader struct{}

func (r *Reader) GUID() GUID                  { return GUID{} }
func (r *Reader) Topic() *Topic               { return nil }
func (r *Reader) Take() (Sample, bool, error) { return Sample{}, false, errNoDDS }
func (r *Reader) TakeTo(buf func(n int) []byte) (Sample, bool, error) {
	return Sample{}, false, errNoDDS
}
func (r *Reader) Wait(timeout time.Duration) (bool, error) { return false, errNoDDS }
func (r *Reader) Matched() (int, error)                    { return 0, errNoDDS }
func (r *Reader) Incompatible() (Incompatible, error)      { return Incompatible{}, errNoDDS }
func (r *Reader) QoS() (qos.Profile, []byte, error)        { return qos.Profile{}, nil, errNoDDS }
func (r *Reader) Close() error                             { return ErrClosed }

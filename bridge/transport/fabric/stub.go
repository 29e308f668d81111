//go:build !cgo || nofabric

package fabric

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

// Available reports whether this build has libfabric.
const Available = false

// Options configure Open (see the cgo build for their meaning).
type Options struct {
	Node          string
	NamePrefix    string
	Timeout       time.Duration
	Logger        *slog.Logger
	ForceRxCQData bool
	ForceMRLocal  bool
	ForceFence    bool
}

// Counts are libfabric objects of this process not closed yet.
type Counts struct{ Providers, Endpoints, Registrations int64 }

// Outstanding is zero in this build.
func Outstanding() Counts { return Counts{} }

// Provider is unavailable in this build.
type Provider struct{ transport.Provider }

// Open reports that this build has no libfabric.
func Open(name string, opts Options) (*Provider, error) {
	return nil, fmt.Errorf("libfabric provider %q: %w: built without cgo or with the nofabric tag", name, transport.ErrNotSupported)
}

// BareResult is what MeasureBare measured.
type BareResult struct {
	Size, Iters int
	Elapsed     time.Duration
}

// BytesPerSecond is the bare loop's throughput.
func (r BareResult) BytesPerSecond() float64 { return 0 }

// MeasureBare reports that this build has no libfabric.
func MeasureBare(provider string, size, iters int) (BareResult, error) {
	return MeasureBareWith(provider, size, iters, Options{})
}

// MeasureBareWith reports that this build has no libfabric.
func MeasureBareWith(provider string, size, iters int, opts Options) (BareResult, error) {
	_, err := Open(provider, opts)
	return BareResult{}, err
}

// MeasureBareStream reports that this build has no libfabric.
func MeasureBareStream(provider string, size, iters, srcSpan, dstSpan int, opts Options) (BareResult, error) {
	return MeasureBareWith(provider, size, iters, opts)
}

// MeasureBareRails reports that this build has no libfabric.
func MeasureBareRails(provider string, size, iters, k int, opts Options) (BareResult, error) {
	_, err := Open(provider, opts)
	return BareResult{}, err
}

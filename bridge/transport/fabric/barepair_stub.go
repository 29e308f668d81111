//go:build !cgo || nofabric

package fabric

import "github.com/rmw-rgaps/rmw_rgaps/bridge/transport"

// BareReceiver is the receiving half of a bare loop between processes;
// this build has no libfabric.
type BareReceiver struct{}

// ListenBare reports that this build has no libfabric.
func ListenBare(provider string, size int, opts Options) (*BareReceiver, error) {
	_, err := Open(provider, opts)
	return nil, err
}

// Addr is empty in this build.
func (r *BareReceiver) Addr() string { return "" }

// Region is empty in this build.
func (r *BareReceiver) Region() transport.RemoteRegion { return transport.RemoteRegion{} }

// Receive reports that this build has no libfabric.
func (r *BareReceiver) Receive(iters int) (int64, error) { return 0, transport.ErrNotSupported }

// Close does nothing in this build.
func (r *BareReceiver) Close() error { return nil }

// BareSender is the sending half of a bare loop between processes; this
// build has no libfabric.
type BareSender struct{}

// DialBare reports that this build has no libfabric.
func DialBare(provider, addr string, size int, opts Options) (*BareSender, error) {
	_, err := Open(provider, opts)
	return nil, err
}

// Send reports that this build has no libfabric.
func (s *BareSender) Send(iters int, remote transport.RemoteRegion, stop <-chan struct{}) (int64, error) {
	return 0, transport.ErrNotSupported
}

// Close does nothing in this build.
func (s *BareSender) Close() error { return nil }

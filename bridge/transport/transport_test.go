package transport_test

import (
	"errors"
	"os"
	"testing"

	"github.com/rmw-rgaps/rmw_rgaps/bridge/transport"
)

func TestRemoteRegionEncoding(t *testing.T) {
	r := transport.RemoteRegion{Addr: 0x7f0012345000, Key: 42, Len: 64 << 20}
	b, err := r.MarshalBinary()
	if err != nil || len(b) != transport.RemoteRegionSize {
		t.Fatalf("MarshalBinary: %x, %v", b, err)
	}
	var back transport.RemoteRegion
	if err := back.UnmarshalBinary(b); err != nil || back != r {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
	if err := back.UnmarshalBinary(b[:23]); err == nil {
		t.Fatal("23 bytes decoded")
	}
}

func TestCheckWrite(t *testing.T) {
	r := transport.RemoteRegion{Len: 4096}
	for _, c := range []struct {
		off  uint64
		n    int
		want error
	}{
		{0, 4096, nil},
		{4095, 1, nil},
		{4096, 0, nil},
		{4096, 1, transport.ErrOutOfBounds},
		{4097, 0, transport.ErrOutOfBounds},
		{^uint64(0), 2, transport.ErrOutOfBounds},
		{0, -1, transport.ErrOutOfBounds},
		{0, transport.MaxMessage + 1, transport.ErrTooLarge},
	} {
		if err := r.CheckWrite(c.off, c.n); !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("CheckWrite(%d, %d) = %v, want %v", c.off, c.n, err, c.want)
		}
	}
}

func TestMapAnon(t *testing.T) {
	b, err := transport.MapAnon(5000)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 5000 || cap(b) < 5000 || cap(b)%os.Getpagesize() != 0 {
		t.Errorf("len %d cap %d", len(b), cap(b))
	}
	b[4999] = 1
	if err := transport.Unmap(b); err != nil {
		t.Fatal(err)
	}
	if _, err := transport.MapAnon(0); err == nil {
		t.Error("mapped 0 bytes")
	}
}

package control

import (
	"strings"
	"testing"
)

// offerLike is about the size of a ring offer, the largest message the
// bridge sends per link event.
type offerLike struct {
	Addr string `json:"addr"`
	Pad  string `json:"pad"`
}

// BenchmarkSend compares a frame sent and received in clear (what the
// handshake does) with a sealed one (every frame after it): the cost of
// sealing per control message. Control messages are a handful per second
// per peer; data never goes through this path.
func BenchmarkSend(b *testing.B) {
	msg := offerLike{Addr: "10.0.0.2:41234", Pad: strings.Repeat("x", 400)}
	run := func(b *testing.B, d, a *Conn) {
		done := make(chan error, 1)
		go func() {
			for i := 0; i < b.N; i++ {
				if _, _, err := a.Recv(); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := d.Send(16, msg); err != nil {
				b.Fatal(err)
			}
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.Run("clear", func(b *testing.B) {
		d, a := connPair(b)
		run(b, d, a)
	})
	b.Run("sealed", func(b *testing.B) {
		d, a := connPair(b)
		key := make([]byte, 32)
		if err := d.startSealing(key, key); err != nil {
			b.Fatal(err)
		}
		if err := a.startSealing(key, key); err != nil {
			b.Fatal(err)
		}
		run(b, d, a)
	})
}

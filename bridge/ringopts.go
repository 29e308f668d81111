package bridge

import "github.com/rmw-rgaps/rmw_rgaps/bridge/ring"

// DefaultMaxChunk is the largest record payload by default: records of a
// few MiB keep a large message's transfer, its placement on the other host
// and the ring's reuse going at once (one record's copy overlaps the next
// one's transfer), at a header and an immediate per record.
const DefaultMaxChunk = 4 << 20

// ringConfig is the configuration of the rings this daemon offers.
func (b *Bridge) ringConfig() ring.Config {
	o := &b.opts
	c := ring.Config{Size: o.RingSize, MaxChunk: o.MaxChunk, NoChunking: o.NoChunking, Mode: o.Mode, Watermark: o.Watermark, Rails: o.Rails}
	if c.MaxChunk == 0 && !c.NoChunking {
		if mr := c.MaxRecord(); mr > ring.HeaderSize {
			c.MaxChunk = min(DefaultMaxChunk, mr-ring.HeaderSize)
		}
	}
	return c
}

// AutoRails is the rail count Options.Rails = 0 chooses: providers that
// move bytes with the CPU of whoever polls (fabric:tcp, plain TCP, and
// fabric:shm, whose writes are copies by the polling process) get a rail
// per four cores, at most 4 (and at least 1), which lets transfers use
// more of them while leaving cores to the applications: on the 16-core
// H100 host 4 rails moved 2.2–2.9× one rail's bytes over shm at 4 and
// 64 MiB, as over tcp (docs/BENCHMARKS.md). verbs gets 1 (a NIC's queue
// pair is not CPU-bound); write-twice allows only 1.
func AutoRails(provider string, mode ring.Mode, cores int) int {
	if mode != ring.WriteImm {
		return 1
	}
	switch provider {
	case "", "fabric:tcp", "fabric:shm", "tcp", "plaintcp":
		return min(4, max(1, cores/4))
	}
	return 1
}

package zerocopy

import (
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/rmw-rgaps/rmw_rgaps/internal/shm"
)

// Config is what a process decides about the topics it opens. The first
// process to open a topic fixes the topic's sizes (PoolSize, QueueCap,
// HeldCap, MaxEndpoints, MaxSamples); later ones use what exists.
type Config struct {
	// Domain is the ROS domain id: it is part of every shared-memory name,
	// so domains never see each other.
	Domain uint32
	// Prefix starts every shared-memory name (default "rgaps", or the
	// RGAPS_SHM_PREFIX environment variable). Tests use their own.
	Prefix string
	// Perm is the permission of created segments (default 0600); 0660 with
	// Group >= 0 gives a group access.
	Perm os.FileMode
	// Group is the group id given to created segments; 0 means
	// RGAPS_SHM_GROUP (a name or gid) or, without it, the creator's group.
	// Set Perm to 0660 (or RGAPS_SHM_MODE=0660) to let that group in.
	Group int

	// PoolSize is the cap of the payload pool of a new topic in bytes
	// (default 256 MiB, or RGAPS_POOL_SIZE). Nothing of it is reserved at
	// creation: the pool commits /dev/shm as blocks are lent beyond what it
	// committed before, up to the cap, and keeps it until the topic is
	// removed. A topic that cannot commit more (a full /dev/shm) fails that
	// loan or publish with ErrNoSpace.
	PoolSize uint64
	// StagingSize is the host pool cap of a new GPU topic: host copies of
	// device samples for host readers (default PoolSize). A process that
	// registers a host pool with CUDA commits all of it first (pinning
	// touches every page).
	StagingSize uint64
	// Device is the CUDA device of GPU pools (default 0, or RGAPS_GPU_DEVICE).
	Device int
	// NoDaemonAutostart stops the engine from starting `rgaps daemon` when
	// a GPU topic needs one and none runs.
	NoDaemonAutostart bool

	// QueueCap bounds any subscription's queue and any publisher's
	// transient-local history (a power of two, default 1024).
	QueueCap uint32
	// HeldCap bounds the samples one endpoint may hold at once: loans not yet
	// published, or taken samples not yet returned (default 256).
	HeldCap uint32
	// MaxEndpoints bounds publishers plus subscriptions of a topic on this
	// host (default 1024: every node of a host has endpoints on
	// /parameter_events and /rosout). Slots are committed as endpoints
	// arrive, so the bound costs address space, not /dev/shm.
	MaxEndpoints uint32
	// MaxSamples bounds the samples alive at once in a topic (default
	// 65536: /rosout keeps up to 100 per node for late joiners). Records
	// are committed as they are first needed.
	MaxSamples uint32

	// BlockTimeout is how long a RELIABLE publisher waits for room (a full
	// pool or a full KEEP_ALL queue of a reliable subscription) before it
	// returns ErrPoolExhausted or ErrQueueFull (default 1 s).
	BlockTimeout time.Duration
	// BusyPoll, when positive, makes waits spin for up to this long before
	// sleeping in the kernel: lowest latency for a core's worth of CPU.
	// Default 0, or RGAPS_BUSY_POLL (a duration such as "50us").
	BusyPoll time.Duration
	// JanitorPeriod is how often a process checks the owners of the
	// endpoints of its open topics, reclaiming those of dead processes and
	// updating deadline and liveliness status (default 100 ms).
	JanitorPeriod time.Duration

	// LockTimeout bounds how long an operation waits for a topic's lock
	// held by a live process that maps the topic (one stopped in a
	// debugger, say): then it fails with an error wrapping
	// shm.ErrLockTimeout that names the holder (default 10 s). Holders
	// that died, or lock words no live user of the topic wrote, are taken
	// over instead (docs/ARCHITECTURE.md §3.5).
	LockTimeout time.Duration

	// SkipStaleClean stops Open from removing what crashed processes left
	// (see Domain.CleanStale).
	SkipStaleClean bool

	// Logger receives the engine's few log lines (path in use at start,
	// reclaimed endpoints). nil means silent.
	Logger *slog.Logger
}

const (
	defaultPoolSize = 256 << 20
	defaultGranule  = 64
)

// FromEnv is Resolve with the domain taken from ROS_DOMAIN_ID too.
func (c Config) FromEnv() (Config, error) {
	if v := os.Getenv("ROS_DOMAIN_ID"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return c, fmt.Errorf("%w: ROS_DOMAIN_ID=%q is not a domain id", ErrInvalid, v)
		}
		c.Domain = uint32(n)
	}
	return c.Resolve()
}

// Resolve fills in the defaults (and the environment's settings) the way
// Open does.
func (c Config) Resolve() (Config, error) { return c.withDefaults() }

func (c Config) withDefaults() (Config, error) {
	if c.Prefix == "" {
		c.Prefix = os.Getenv("RGAPS_SHM_PREFIX")
		if c.Prefix == "" {
			c.Prefix = "rgaps"
		}
	}
	for _, r := range c.Prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') || len(c.Prefix) > 32 {
			return c, fmt.Errorf("%w: shared-memory prefix %q must be at most 32 of [A-Za-z0-9_-]", ErrInvalid, c.Prefix)
		}
	}
	if c.Perm == 0 {
		c.Perm = 0o600
		if v := os.Getenv("RGAPS_SHM_MODE"); v != "" {
			m, err := strconv.ParseUint(v, 8, 32)
			if err != nil || m&^0o666 != 0 || m&0o600 != 0o600 {
				return c, fmt.Errorf("%w: RGAPS_SHM_MODE=%q: want octal permissions such as 0660 that include owner read-write", ErrInvalid, v)
			}
			c.Perm = os.FileMode(m)
		}
	}
	if c.Group == 0 {
		c.Group = -1
		if v := os.Getenv("RGAPS_SHM_GROUP"); v != "" {
			g, err := lookupGroup(v)
			if err != nil {
				return c, fmt.Errorf("%w: RGAPS_SHM_GROUP: %v", ErrInvalid, err)
			}
			c.Group = g
		}
	}
	if c.PoolSize == 0 {
		c.PoolSize = defaultPoolSize
		if v := os.Getenv("RGAPS_POOL_SIZE"); v != "" {
			n, err := parseSize(v)
			if err != nil {
				return c, fmt.Errorf("%w: RGAPS_POOL_SIZE: %v", ErrInvalid, err)
			}
			c.PoolSize = n
		}
	}
	if c.StagingSize == 0 {
		c.StagingSize = c.PoolSize
	}
	if c.Device == 0 {
		if v := os.Getenv("RGAPS_GPU_DEVICE"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return c, fmt.Errorf("%w: RGAPS_GPU_DEVICE=%q", ErrInvalid, v)
			}
			c.Device = n
		}
	}
	if c.QueueCap == 0 {
		c.QueueCap = 1024
	}
	if c.QueueCap&(c.QueueCap-1) != 0 || c.QueueCap > 1<<20 {
		return c, fmt.Errorf("%w: queue capacity %d must be a power of two up to 2^20", ErrInvalid, c.QueueCap)
	}
	if c.HeldCap == 0 {
		c.HeldCap = 256
	}
	if c.MaxEndpoints == 0 {
		c.MaxEndpoints = 1024
	}
	if c.MaxSamples == 0 {
		c.MaxSamples = 65536
	}
	if c.HeldCap > 1<<16 || c.MaxEndpoints > 1<<12 || c.MaxSamples > 1<<24 {
		return c, fmt.Errorf("%w: held capacity, endpoints or samples too large", ErrInvalid)
	}
	if c.PoolSize < 4096 || c.PoolSize > 1<<40 {
		return c, fmt.Errorf("%w: pool size %d outside [4 KiB, 1 TiB]", ErrInvalid, c.PoolSize)
	}
	if c.BlockTimeout == 0 {
		c.BlockTimeout = time.Second
	}
	if c.BusyPoll == 0 {
		if v := os.Getenv("RGAPS_BUSY_POLL"); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				return c, fmt.Errorf("%w: RGAPS_BUSY_POLL: %v", ErrInvalid, err)
			}
			c.BusyPoll = d
		}
	}
	if c.LockTimeout == 0 {
		c.LockTimeout = 10 * time.Second
	}
	if c.JanitorPeriod == 0 {
		c.JanitorPeriod = 100 * time.Millisecond
	}
	return c, nil
}

// access is who may share the segments this configuration creates: Open
// refuses any other (shm.ErrUntrusted).
func (c Config) access() shm.Access { return shm.Access{Perm: c.Perm, Group: c.Group} }

// parseSize reads "256M", "1G", "4096", "64KiB" and the like.
func parseSize(s string) (uint64, error) {
	mult := uint64(1)
	num := s
	for _, u := range []struct {
		suf string
		m   uint64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}} {
		if len(s) > len(u.suf) && s[len(s)-len(u.suf):] == u.suf {
			mult, num = u.m, s[:len(s)-len(u.suf)]
			break
		}
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
}

// LookupGroup accepts a group name or a numeric gid.
func LookupGroup(v string) (int, error) { return lookupGroup(v) }

func lookupGroup(v string) (int, error) {
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return n, nil
	}
	g, err := user.LookupGroup(v)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// ParseSize reads a byte size such as "64M", "1GiB" or "4096".
func ParseSize(s string) (uint64, error) { return parseSize(s) }

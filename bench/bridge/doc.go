// Package benchbridge is `rgaps-bench bridge`: throughput and latency
// through the inter-host bridge (package bridge) between two "hosts" that
// are two bridge.Bridge instances in this process (separate shared-memory
// prefixes, as two hosts have separate /dev/shm) talking over 127.0.0.1,
// against baselines measured in the same run: a bare fi_writedata loop
// over the same libfabric provider (and over K endpoint pairs at once, the
// rails variant's baseline), a transport-level WriteImm loop into a
// ring-sized region, and the bridge over the plain TCP transport; and the
// bridge's variants (write-twice, watermark 1/4, per-topic rings, one
// topic over K rails) against its default (one rail). With -netns
// (RunNetns) the hosts are two network namespaces joined by a veth pair,
// each with rgapsd as a process of its own and the publisher and
// subscriber as processes in them, and the bare loop runs between a sender
// and a receiver process in the namespaces.
//
// What is timed: from the first publish to the last take, with the
// publisher writing only each message's 16-byte stamp (or, with -fill,
// the whole message) and the subscriber checking only the stamp; whole
// payloads are written and CRC-checked in untimed passes (warm-up,
// latency, a verification pass after each timed run).
//
// It owns its private shared-memory prefixes and removes every segment of
// them when a run ends; it never touches another prefix. Numbers are
// reported, never asserted (CONVENTIONS.md rule 11): its tests check that
// the report is well formed and that every message arrived intact.
package benchbridge

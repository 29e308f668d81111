// Package benchscale is `rgaps-bench scale`: how the bridge scales with
// topics and subscriber processes between two emulated hosts (network
// namespaces joined by a veth pair, or loopback), each with rgapsd as a
// process of its own (internal/daemonproc, internal/netns). Host a runs
// publisher processes sharing T topics, host b subscriber processes that
// each subscribe to all T. It reports set-up and discovery times (until
// the other host's daemon lists every endpoint), the time until every
// subscription took a first message, and each daemon's resident memory
// and CPU time while idle, per cell (T × subscriber processes).
//
// Its child processes are roles of bench/e2e's child machinery
// (benche2e.RegisterChild, StartChild). Numbers are reported, never
// asserted (CONVENTIONS.md rule 11): its tests check that the report is
// well formed and that every subscription got its message.
package benchscale

// Package benche2e is `rgaps-bench e2e`: the thesis' end-to-end
// measurement (Figure 4.6, with stage breakdowns in the manner of Tables
// 4.2–4.5). A publisher on host A publishes a message resident in GPU
// memory to N GPU subscriber processes on host B; the latency of each
// subscriber runs from the start of the publish call to the moment it
// holds a device pointer to the complete data.
//
// The package owns the harness (Run: every System over sizes × N ×
// rounds; statistics, ratios, the Markdown report, PNG and SVG plots,
// the JSON of raw numbers, a progress bar), the plug-in point for the
// rgaps bridge (System, Env, Ours), and these systems:
//
//   - Baseline, the thesis' baseline pipeline as real processes
//     (baseline.go): pageable D2H, Unix socket, TCP between the hosts,
//     iceoryx 2.0 (RouDi started and stopped by the run) to N
//     subscribers that each make their own pageable H2D copy.
//   - LowerBound, the serial lower bound (lowerbound.go): bare pinned
//     D2H + bare fi_writedata + bare pinned H2D, summed; where the
//     bridge has several rails on this machine (bridge.AutoRails), also
//     LowerBoundRails, the same with the fi_writedata stage in equal
//     parts over that many endpoint pairs at once.
//
// Each subscriber answers a round once it holds its pointer (or its own
// device copy) and checks the bytes (a checksum kernel, untimed) only
// when asked, after every subscriber of the round answered: the CUDA
// driver spins on the CPU while a process waits for a kernel, and a check
// run at once delayed a subscriber of the same round woken onto that CPU
// by hundreds of microseconds.
//
// Hosts A and B are two network namespaces joined by a veth pair
// (Options.Netns) or one namespace over loopback; either way one machine
// and one clock, so times stamped in different processes compare
// directly. On a machine without a GPU (or with Options.HostOnly) device
// memory is host memory and the copies are memcpy (device.go): the
// processes, sockets, iceoryx chunks and checksums are all real, the
// times are not GPU times.
//
// Child processes are this executable run as `rgaps-bench bench-e2e-child
// ROLE` (ChildCommand, RegisterChild); each talks to the harness over a
// socket pair on fd 3 in JSON frames (benchutil.WriteFrame).
//
// The package must not be used by the engine or the bridge; the bridge's
// System lives with the bridge and registers itself in Ours.
package benche2e

//go:build race

package zerocopy

// raceEnabled: the race detector slows the sweep down several times, so it
// takes a stride of the words (see TestCorruptionSweep).
const raceEnabled = true

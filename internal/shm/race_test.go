//go:build race

package shm

// raceEnabled: built with the race detector, whose instrumentation allocates.
const raceEnabled = true

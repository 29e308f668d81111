//go:build !race

package bridge

// raceEnabled: built with the race detector (rails.go fences landings).
const raceEnabled = false

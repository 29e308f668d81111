//go:build !race

package zerocopy

const raceEnabled = false

//go:build !race

package benchmarks

const raceEnabled = false

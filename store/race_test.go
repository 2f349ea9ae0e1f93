//go:build race

package store

// raceEnabled: the race detector slows the tests' damage trials some
// tenfold; they run fewer of them.
const raceEnabled = true

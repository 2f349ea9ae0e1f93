//go:build race

package benchmarks

// raceEnabled: the race detector slows the quick report some sixfold
// (about 300 s against 49 s); under it TestQuickReport runs its light form.
const raceEnabled = true

//go:build race

package solver

// raceEnabled: the race detector slows the exact solves some tenfold;
// TestSameSeedSamePathUnderLoad then solves one suite instance, not four.
const raceEnabled = true

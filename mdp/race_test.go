//go:build race

package mdp

// raceEnabled: the race detector slows the penalty's statistical tests
// some fifteenfold; they run their light form under it.
const raceEnabled = true

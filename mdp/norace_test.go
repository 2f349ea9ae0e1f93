//go:build !race

package mdp

const raceEnabled = false

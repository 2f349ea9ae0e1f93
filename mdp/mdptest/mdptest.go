// Package mdptest holds what the tests of the placement policies share
// when they check a policy against the exact optimum of the placement MDP
// (Tan et al., INFOCOM 2013, Theorem 3): the repository's MDP-solvable
// scenarios, loading one, and solving its MDP.
package mdptest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/sim"
)

// Solvable returns the repository's placement scenarios whose MDP is
// solved exactly (discrete workloads, listed slot costs, finite waiting
// rooms), as paths under root, the repository's top directory relative to
// the calling test's package (e.g. "../..").
func Solvable(root string) []string {
	var out []string
	for _, p := range []string{"search/testdata/mdp-small.json", "search/testdata/mdp-8slots.json", "examples/placement-scenario.json"} {
		out = append(out, filepath.Join(root, p))
	}
	return out
}

// Scenario loads the placement scenario at path, failing the test if it
// cannot.
func Scenario(t testing.TB, path string) *sim.Scenario {
	t.Helper()
	s, err := sim.LoadScenario(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Solve returns the MDP of s and its exact solution (mdp.SolvePlacement
// at its default options), failing the test if either cannot be had.
func Solve(t testing.TB, s *sim.Scenario) (mdp.PlacementModel, *mdp.PlacementSolution) {
	t.Helper()
	m, err := mdp.ModelOf(s)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := mdp.SolvePlacement(context.Background(), m, mdp.SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return m, sol
}

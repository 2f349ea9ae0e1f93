// Package simtest holds what tests of several packages share when they
// draw placement scenarios nobody tuned on: seeded generators of small
// scenarios whose MDP is solved exactly (mdp's bounds, the fitted
// policies of policy/adp).
package simtest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/optd/optd/sim"
)

// PlacementScenario draws a small placement scenario whose MDP is
// solvable: 3–8 slots with repeated costs (classes of several slots), K so
// that K·max R fits, loads from light to overloaded (finite waiting rooms
// of 0–3), independent or dependent (X, R). It returns the scenario and
// its JSON on one line (to quote in a failure).
func PlacementScenario(t testing.TB, seed uint64, jobs, reps int) (*sim.Scenario, string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 77))
	palette := []float64{1, 2, 3, 5, 8, 13, 21, 34}
	maxR, k, costs := cluster(rng, 1, 3, 3, func() float64 { return palette[rng.IntN(len(palette))] })
	mu := 1.0
	lam := []float64{0.3, 0.6, 0.9, 1.2, 2}[rng.IntN(5)] * mu
	wait := rng.IntN(4)
	var workload string
	switch rng.IntN(3) {
	case 0: // independent
		reduces := `{"kind": "discrete", "values": [1], "probs": [1]}`
		if maxR > 1 {
			reduces = fmt.Sprintf(`{"kind": "discrete", "values": [1, %d], "probs": [0.5, 0.5]}`, maxR)
		}
		workload = fmt.Sprintf(`{"data": {"kind": "discrete", "values": [%d, %d], "probs": [0.6, 0.4]},
			"reduces": %s}`, 1+rng.IntN(5), 20+rng.IntN(60), reduces)
	case 1: // dependent: big jobs have more reducers
		workload = fmt.Sprintf(`{"joint": [{"data": %d, "reduces": 1, "prob": 0.5},
			{"data": %d, "reduces": %d, "prob": 0.3}, {"data": %d, "reduces": 1, "prob": 0.2}]}`,
			1+rng.IntN(4), 30+rng.IntN(60), maxR, 10+rng.IntN(20))
	default: // dependent: big jobs have fewer reducers
		workload = fmt.Sprintf(`{"joint": [{"data": %d, "reduces": %d, "prob": 0.6},
			{"data": %d, "reduces": 1, "prob": 0.4}]}`, 2+rng.IntN(6), maxR, 40+rng.IntN(40))
	}
	return decode(t, seed, fmt.Sprintf(`{"slots": {"costs": %s}, "max_jobs_in_service": %d, "arrival_rate": %g,
		"service_rate": %g, "max_waiting": %d, "workload": %s, "jobs": %d, "warmup_jobs": 50,
		"replications": %d, "seed": %d}`, costsJSON(t, costs), k, lam, mu, wait, workload, jobs, reps, seed))
}

// DistinctCostScenario draws a small placement scenario whose MDP is
// solvable, of another family than PlacementScenario's: 4–8 slots of
// costs drawn from 1–30 (mostly distinct, so greedy is often far from
// the optimum), K 2–3 (within what K·max R allows), loads from light to
// overloaded, finite waiting rooms of 0–2, and a joint law of (X, R) on
// 2–4 atoms drawn at random.
func DistinctCostScenario(t testing.TB, seed uint64, jobs, reps int) (*sim.Scenario, string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 991))
	maxR, k, costs := cluster(rng, 2, 2, 4, func() float64 { return float64(1 + rng.IntN(30)) })
	lam := []float64{0.4, 0.7, 1.0, 1.3, 1.6}[rng.IntN(5)]
	atoms := make([]map[string]any, 2+rng.IntN(3))
	for a := range atoms {
		atoms[a] = map[string]any{"data": 1 + rng.IntN(80), "reduces": 1 + rng.IntN(maxR), "prob": 1 / float64(len(atoms))}
	}
	workload, err := json.Marshal(map[string]any{"joint": atoms})
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, seed, fmt.Sprintf(`{"slots": {"costs": %s}, "max_jobs_in_service": %d, "arrival_rate": %g,
		"service_rate": 1, "max_waiting": %d, "workload": %s, "jobs": %d, "warmup_jobs": 50,
		"replications": %d, "seed": %d}`, costsJSON(t, costs), k, lam, rng.IntN(3), workload, jobs, reps, seed))
}

// cluster draws the reducers' maximum R (1–2), K (kMin + 0…kSpan−1) and
// at least max(K·R, minSlots + 0…4) slots, at most 8 (K lowered to fit),
// each of cost cost().
func cluster(rng *rand.Rand, kMin, kSpan, minSlots int, cost func() float64) (maxR, k int, costs []float64) {
	maxR = 1 + rng.IntN(2)
	k = kMin + rng.IntN(kSpan)
	slots := max(k*maxR, minSlots+rng.IntN(5))
	if slots > 8 {
		k, slots = 8/maxR, 8
	}
	costs = make([]float64, slots)
	for i := range costs {
		costs[i] = cost()
	}
	return maxR, k, costs
}

func costsJSON(t testing.TB, costs []float64) string {
	cj, err := json.Marshal(costs)
	if err != nil {
		t.Fatal(err)
	}
	return string(cj)
}

// decode decodes the generated scenario js, failing the test if it
// cannot, and returns it with js on one line.
func decode(t testing.TB, seed uint64, js string) (*sim.Scenario, string) {
	t.Helper()
	s, err := sim.DecodeScenario([]byte(js), "")
	if err != nil {
		t.Fatalf("seed %d: %v\n%s", seed, err, js)
	}
	return s, strings.Join(strings.Fields(js), " ")
}

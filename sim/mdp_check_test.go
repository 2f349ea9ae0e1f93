package sim_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
)

// ciFactor widens the 95% half-width for the agreement checks: the runs are
// seeded, so a check either always passes or always fails, and a factor 2
// (≈ 4 standard errors) keeps a correct simulator from a seed-dependent
// failure while a wrong one (a bias of a few percent) still fails.
const ciFactor = 2

func jointWorkload(t testing.TB, pts ...models.JointPoint) *models.Workload {
	t.Helper()
	w, err := models.NewJointWorkload(pts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func registry(names ...string) []sim.NamedFactory {
	var out []sim.NamedFactory
	for _, name := range names {
		out = append(out, sim.NamedFactory{Name: name, New: func(seed uint64) (policy.Placement, error) {
			return policy.NewPlacement(name, policy.PlacementConfig{Seed: seed})
		}})
	}
	return out
}

func pm(s *sim.Scenario) mdp.PlacementModel {
	return mdp.PlacementModel{SlotCosts: s.SlotCosts, K: s.K, Lambda: s.ArrivalRate, Mu: s.ServiceRate, MaxWaiting: s.MaxWaiting, Workload: s.Workload}
}

// TestSimulationMatchesMDP: on small scenarios the simulated mean cost of
// greedy, random and the MDP's optimal table agrees with the MDP's exact
// evaluation of the same policy on the same chain, within the confidence
// interval; and the optimum is ≤ every policy.
func TestSimulationMatchesMDP(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates tens of thousands of jobs")
	}
	for _, c := range []struct {
		name string
		s    *sim.Scenario
	}{
		{"K2-joint", &sim.Scenario{
			SlotCosts: []float64{1, 2, 4, 8, 16, 32}, SlotsExplicit: true, K: 3, ArrivalRate: 0.8, ServiceRate: 1, MaxWaiting: 2,
			Workload: jointWorkload(t, models.JointPoint{Data: 1, Reduces: 1, Prob: 0.5}, models.JointPoint{Data: 10, Reduces: 2, Prob: 0.5}),
			Jobs:     4000, WarmupJobs: 100, Replications: 8, Seed: 11}},
		{"K2-equalcosts-classes", &sim.Scenario{
			SlotCosts: []float64{1, 1, 3, 3, 9}, SlotsExplicit: true, K: 2, ArrivalRate: 1.5, ServiceRate: 1, MaxWaiting: 1,
			Workload: jointWorkload(t, models.JointPoint{Data: 2, Reduces: 1, Prob: 0.3}, models.JointPoint{Data: 5, Reduces: 1, Prob: 0.3},
				models.JointPoint{Data: 20, Reduces: 2, Prob: 0.4}),
			Jobs: 4000, WarmupJobs: 100, Replications: 8, Seed: 12}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sol, err := mdp.SolvePlacement(ctx, pm(c.s), mdp.SolveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			fs := registry(placement.NameGreedy, placement.NameRandom, placement.NameRecedingHorizon)
			fs = append(fs, sim.NamedFactory{Name: "mdp-optimal", New: func(uint64) (policy.Placement, error) { return sol.Policy, nil }})
			costs := map[string][]float64{}
			for rep := range c.s.Replications {
				r, err := c.s.RunReplication(ctx, rep, fs, false)
				if err != nil {
					t.Fatal(err)
				}
				for name, res := range r.Results {
					costs[name] = append(costs[name], res.MeanCost)
				}
			}
			exact := map[string]float64{"mdp-optimal": sol.Optimal}
			for _, name := range []string{placement.NameGreedy, placement.NameRandom} {
				v, err := mdp.EvaluatePolicy(ctx, pm(c.s), mustNew(t, name), mdp.SolveOptions{})
				if err != nil {
					t.Fatal(err)
				}
				exact[name] = v
			}
			for name, v := range exact {
				m, h := sim.MeanCI95(costs[name])
				if v < m-ciFactor*h || v > m+ciFactor*h {
					t.Errorf("%s: exact %.5g outside simulated %.5g ± %d·%.3g", name, v, m, ciFactor, h)
				}
				if v < sol.Optimal*(1-1e-9) {
					t.Errorf("%s: exact %.6g below the optimum %.6g", name, v, sol.Optimal)
				}
				t.Logf("%s: exact %.5g, simulated %.5g ± %.3g", name, v, m, h)
			}
			m, h := sim.MeanCI95(costs[placement.NameRecedingHorizon])
			if m+ciFactor*h < sol.Optimal {
				t.Errorf("receding-horizon %.5g ± %.3g below the optimum %.5g", m, h, sol.Optimal)
			}
		})
	}
}

func mustNew(t testing.TB, name string) policy.Placement {
	p, err := policy.NewPlacement(name, policy.PlacementConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHindsightBoundProperty: on random small scenarios, per replication,
// the hindsight LP on the recorded trace (counted jobs) and the empty-cluster
// figure are ≤ the realized mean cost of every policy on that trace.
func TestHindsightBoundProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	ctx := context.Background()
	for trial := range 15 {
		k := 1 + rng.IntN(3)
		maxR := 1 + rng.IntN(3)
		costs := make([]float64, k*maxR+rng.IntN(3))
		for i := range costs {
			costs[i] = float64(1 + rng.IntN(6)) // few classes
		}
		var pts []models.JointPoint
		for r := 1; r <= maxR; r++ {
			pts = append(pts, models.JointPoint{Data: float64(1 + rng.IntN(30)), Reduces: r, Prob: 1 / float64(maxR)})
		}
		s := &sim.Scenario{SlotCosts: costs, SlotsExplicit: true, K: k, ArrivalRate: 0.3 + rng.Float64(), ServiceRate: 1,
			MaxWaiting: rng.IntN(3), Workload: jointWorkload(t, pts...), Jobs: 300, WarmupJobs: 10, Replications: 1, Seed: rng.Uint64()}
		r, err := s.RunReplication(ctx, 0, registry(policy.PlacementNames()...), true)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []mdp.TraceJob
		for _, j := range r.Records {
			if j.Counted {
				jobs = append(jobs, mdp.TraceJob{Start: j.Start, End: j.End, Y: j.Y(), R: j.R})
			}
		}
		lb, err := mdp.HindsightBound(ctx, jobs, costs)
		if err != nil {
			t.Fatal(err)
		}
		lb /= float64(len(jobs))
		for name, res := range r.Results {
			if res.Counted != len(jobs) {
				t.Fatalf("trial %d: %s counted %d jobs, trace has %d", trial, name, res.Counted, len(jobs))
			}
			if lb > res.MeanCost*(1+1e-9) {
				t.Errorf("trial %d: hindsight bound %.6g > %s's cost %.6g", trial, lb, name, res.MeanCost)
			}
		}
		if lb < r.Results[placement.NameGreedy].EmptyClusterMean*(1-1e-9) {
			t.Errorf("trial %d: hindsight %.6g below the empty-cluster figure %.6g", trial, lb, r.Results[placement.NameGreedy].EmptyClusterMean)
		}
	}
}

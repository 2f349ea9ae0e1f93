package benchmarks

import (
	"context"
	"math"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
)

// TestPenalizedBounds: on short Fig. 9 settings beyond the paper (K = 100
// and 10), penalizedBounds gives one finite bound per replication whose
// mean is below every simulated policy's mean cost (an expected-cost
// bound, with the gap between them far wider than the noise here), and
// certifiedGap agrees with the ratio of the sums.
func TestPenalizedBounds(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		k    int
		rho  float64
		seed uint64
	}{{100, 0.9, 1}, {10, 0.9, 2}}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, c := range cases {
		env := &Env{Config: Config{Quick: true, Seed: c.seed}}
		s, err := fig9ScenarioK(c.k, c.rho, 600, 100, 4, c.seed)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := penalizedBounds(ctx, env, "test", s, 10, mdp.LagrangeOptions{Iterations: 50})
		if err != nil {
			t.Fatal(err)
		}
		if pr.skipped != "" || len(pr.perJob) != s.Replications {
			t.Fatalf("K = %d: %d bounds for %d replications (skipped %q)", c.k, len(pr.perJob), s.Replications, pr.skipped)
		}
		fs := registryFactories(s, []string{placement.NameGreedy, placement.NameStateThreshold})
		cost := map[string][]float64{}
		for rep := range s.Replications {
			r, err := s.RunReplication(ctx, rep, fs, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				cost[f.Name] = append(cost[f.Name], r.Results[f.Name].MeanCost)
			}
		}
		for name, xs := range cost {
			g, h := certifiedGap(xs, pr.perJob)
			sc, sb := 0.0, 0.0
			for i := range xs {
				if math.IsNaN(pr.perJob[i]) || math.IsInf(pr.perJob[i], 0) {
					t.Fatalf("K = %d, replication %d: bound %v", c.k, i, pr.perJob[i])
				}
				sc, sb = sc+xs[i], sb+pr.perJob[i]
			}
			if want := 100 * (sc - sb) / sb; math.Abs(g-want) > 1e-9*math.Max(1, math.Abs(want)) {
				t.Errorf("K = %d, %s: certified gap %v, ratio of sums %v", c.k, name, g, want)
			}
			if g-h <= 0 {
				t.Errorf("K = %d, %s: mean cost not above the penalized bound: gap %.2f ± %.2f%%", c.k, name, g, h)
			}
			t.Logf("K = %d, %s: certified gap %.1f ± %.1f%%", c.k, name, g, h)
		}
	}
	// A trace whose works are the trace's own bytes has no penalized bound.
	s, err := scenarioFromJSON(map[string]any{
		"slots": map[string]any{"costs": []float64{1, 2, 3}}, "max_jobs_in_service": 1, "service_rate": 1,
		"trace": map[string]any{"file": "../data/swim/FB-2010_samples_24_times_1hr_0.tsv", "max_reduces": 1, "load": 0.5, "work": sim.WorkShuffleBytes},
		"jobs":  50,
	}, ".")
	if err != nil {
		t.Fatal(err)
	}
	pr, err := penalizedBounds(ctx, &Env{Config: Config{Quick: true}}, "bytes", s, 5, mdp.LagrangeOptions{})
	if err != nil || pr.skipped == "" || pr.perJob != nil {
		t.Errorf("trace with byte works: %+v, %v; want skipped", pr, err)
	}
}

package sim_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
)

var fig9 = flag.Bool("fig9", false, "reproduce Fig. 9 of Tan et al. (INFOCOM 2013): 5 loads × 10 replications × 50,000 jobs")

// TestFig9 reproduces Fig. 9 (§V-B): savings of receding-horizon over random
// and greedy, (baseline − RH)/baseline, per replication (common random
// numbers make the savings paired), mean ± 95% CI over the replications.
// It checks what the model guarantees and the paper's headline: every
// policy's mean cost on a replication is at least the empty-cluster bound
// of the same jobs (each job placed alone on the cheapest slots), and
// receding-horizon saves over random placement (the 95% CI of the paired
// saving lies above 0) at every load. By default it runs the lightest and
// the heaviest load on 2 replications of their first 5,000 jobs; the
// full reproduction, with the table, runs with
// go test ./sim -run TestFig9 -fig9 -v
func TestFig9(t *testing.T) {
	ctx := context.Background()
	loads := []string{"0.2", "0.6"}
	if *fig9 {
		loads = []string{"0.2", "0.3", "0.4", "0.5", "0.6"}
		fmt.Println("| ρ | random | greedy | receding-horizon | empty-cluster | saving vs random (%) | saving vs greedy (%) |")
		fmt.Println("|---|---|---|---|---|---|---|")
	}
	for _, rho := range loads {
		s, err := sim.LoadScenario(filepath.Join("testdata", "scenarios", "fig9-rho"+rho+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if !*fig9 {
			s.Jobs, s.WarmupJobs, s.Replications = 5000, 500, 2
		}
		fs := registry(placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon)
		cost := map[string][]float64{}
		var sr, sg, empty []float64
		for rep := range s.Replications {
			r, err := s.RunReplication(ctx, rep, fs, false)
			if err != nil {
				t.Fatal(err)
			}
			for n, res := range r.Results {
				cost[n] = append(cost[n], res.MeanCost)
				if res.MeanCost < res.EmptyClusterMean*(1-1e-12) {
					t.Errorf("ρ = %s, replication %d: %s's mean cost %g is below the empty-cluster bound %g of its jobs",
						rho, rep, n, res.MeanCost, res.EmptyClusterMean)
				}
			}
			rh := r.Results[placement.NameRecedingHorizon].MeanCost
			rnd, g := r.Results[placement.NameRandom].MeanCost, r.Results[placement.NameGreedy].MeanCost
			sr = append(sr, 100*(rnd-rh)/rnd)
			sg = append(sg, 100*(g-rh)/g)
			empty = append(empty, r.Results[placement.NameGreedy].EmptyClusterMean)
		}
		if m, h := sim.MeanCI95(sr); !(m-h > 0) {
			t.Errorf("ρ = %s: receding-horizon's saving over random is %.3g ± %.2g%%, not above 0", rho, m, h)
		}
		if *fig9 {
			f := func(xs []float64) string { m, h := sim.MeanCI95(xs); return fmt.Sprintf("%.4g ± %.2g", m, h) }
			fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", rho, f(cost[placement.NameRandom]), f(cost[placement.NameGreedy]),
				f(cost[placement.NameRecedingHorizon]), f(empty), f(sr), f(sg))
		}
	}
}

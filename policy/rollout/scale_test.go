package rollout_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/adp" // the peers adp-bid-price and adp-penalty
	"github.com/optd/optd/sim"
)

// envInt reads an integer setting of TestRolloutScale.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s = %q: want an integer ≥ 1", name, v)
	}
	return n
}

// TestRolloutScale (OPTD_ROLLOUT_SCALE=1, `make rollout-scale`, `make
// traces-rolling`) measures the rollout against its peers on the Fig. 9 setting beyond the paper
// (K = 100 at ρ = 0.6 and 0.9, K = 20 and 10 at ρ = 0.9) or on the
// placement scenario file OPTD_ROLLOUT_SCENARIO: every policy of
// OPTD_ROLLOUT_POLICIES (the last one is the policy measured) on the same
// replications (OPTD_ROLLOUT_JOBS jobs, a tenth of them warm-up,
// OPTD_ROLLOUT_REPS replications), its mean cost, the measured policy's
// saving over it paired per replication (95% CI), and its time per job.
// It prints; it asserts only that every run completes.
func TestRolloutScale(t *testing.T) {
	if os.Getenv("OPTD_ROLLOUT_SCALE") == "" {
		t.Skip("set OPTD_ROLLOUT_SCALE=1 (make rollout-scale): minutes on 2 cores")
	}
	jobs, reps := envInt(t, "OPTD_ROLLOUT_JOBS", 10000), envInt(t, "OPTD_ROLLOUT_REPS", 5)
	specs := strings.Split(cmp.Or(os.Getenv("OPTD_ROLLOUT_POLICIES"), "greedy,receding-horizon,adp-bid-price,state-threshold,rollout:samples=64,rollout"), ",")
	var scenarios []*sim.Scenario
	var labels []string
	if f := os.Getenv("OPTD_ROLLOUT_SCENARIO"); f != "" {
		s, err := sim.LoadScenario(f)
		if err != nil {
			t.Fatal(err)
		}
		s.Replications = reps
		scenarios, labels = append(scenarios, s), append(labels, f)
	} else {
		for _, c := range []struct {
			k   int
			rho float64
		}{{100, 0.6}, {100, 0.9}, {20, 0.9}, {10, 0.9}} {
			s := fig9(t, c.k, c.rho, jobs)
			s.WarmupJobs, s.Replications = jobs/10, reps
			scenarios, labels = append(scenarios, s), append(labels, fmt.Sprintf("K = %d, ρ = %g", c.k, c.rho))
		}
	}
	measured := specs[len(specs)-1]
	for i, s := range scenarios {
		cost := map[string][]float64{}
		spent := map[string]time.Duration{}
		for rep := range reps {
			for _, spec := range specs {
				f := sim.NamedFactory{Name: spec, New: func(seed uint64) (policy.Placement, error) {
					name, params, err := policy.ParsePlacementSpec(spec)
					if err != nil {
						return nil, err
					}
					return policy.NewPlacement(name, policy.PlacementConfig{Seed: seed, Params: params, Model: s.PlacementModel()})
				}}
				start := time.Now()
				r, err := s.RunReplication(context.Background(), rep, []sim.NamedFactory{f}, false)
				if err != nil {
					t.Fatal(err)
				}
				spent[spec] += time.Since(start)
				cost[spec] = append(cost[spec], r.Results[spec].MeanCost)
			}
		}
		for _, spec := range specs {
			saving := make([]float64, reps)
			for k := range saving {
				saving[k] = 100 * (cost[spec][k] - cost[measured][k]) / cost[spec][k]
			}
			m, h := sim.MeanCI95(cost[spec])
			sm, sh := sim.MeanCI95(saving)
			fmt.Printf("%s | %s | cost %.4f ± %.3f | %s saving over it %.2f ± %.2f%% | %.1f µs per job\n",
				labels[i], spec, m, h, measured, sm, sh, float64(spent[spec].Microseconds())/float64(reps*s.Jobs))
		}
	}
}

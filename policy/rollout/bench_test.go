package rollout_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/rollout"
	"github.com/optd/optd/sim"
)

// recorder places by greedy and keeps a copy of every request.
type recorder struct{ reqs []*policy.PlacementRequest }

func (*recorder) Name() string { return "recorder" }

func (r *recorder) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	c := *req
	c.Free = slices.Clone(req.Free)
	c.Held = make([][]int, len(req.Held))
	for k, h := range req.Held {
		c.Held[k] = slices.Clone(h)
	}
	r.reqs = append(r.reqs, &c)
	return placement.Greedy{}.Place(req)
}

// fig9 is the Fig. 9 setting (1000 slots, costs U[1, 100], X ~ U[1, 100],
// R ~ U{1..10}) with k jobs in service at load rho.
func fig9(b testing.TB, k int, rho float64, jobs int) *sim.Scenario {
	b.Helper()
	data, _ := json.Marshal(map[string]any{
		"slots":               map[string]any{"count": 1000, "cost": map[string]any{"kind": "uniform", "min": 1, "max": 100}},
		"max_jobs_in_service": k, "arrival_rate": rho, "service_rate": 1,
		"workload": map[string]any{"data": map[string]any{"kind": "uniform", "min": 1, "max": 100}, "reduces": map[string]any{"kind": "uniform-int", "min": 1, "max": 10}},
		"jobs":     jobs, "seed": 1,
	})
	s, err := sim.DecodeScenario(data, ".")
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkPlace is the cost of one decision on the requests of a Fig. 9
// run (K = 100 at ρ = 0.6 and 0.9, K = 10 at ρ = 0.9), the rollout at its
// defaults beside its base, state-threshold, on the same requests.
func BenchmarkPlace(b *testing.B) {
	for _, c := range []struct {
		k   int
		rho float64
	}{{100, 0.6}, {100, 0.9}, {10, 0.9}} {
		s := fig9(b, c.k, c.rho, 500)
		rec := &recorder{}
		if _, err := s.Model().Run(context.Background(), s.Source(0), rec, sim.RunOptions{}); err != nil {
			b.Fatal(err)
		}
		for _, name := range []string{placement.NameStateThreshold, rollout.Name} {
			pol, err := policy.NewPlacement(name, policy.PlacementConfig{Workload: s.Workload, Model: s.PlacementModel()})
			if err != nil {
				b.Fatal(err)
			}
			b.Run(fmt.Sprintf("K=%d,rho=%g/%s", c.k, c.rho, name), func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if _, err := pol.Place(rec.reqs[i%len(rec.reqs)]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkPlaceTrace is the cost of one decision on the requests of the
// first jobs of SWIM FB-2010 (search/testdata/swim-fb2010.json):
// rolling-horizon beside the rollout on it, with the futures' jobs drawn
// from the model's law and from the jobs seen. The stateful policies are
// fed the requests in their order, again and again.
func BenchmarkPlaceTrace(b *testing.B) {
	s, err := sim.LoadScenario("../../search/testdata/swim-fb2010.json")
	if err != nil {
		b.Fatal(err)
	}
	s.Jobs = 2000
	rec := &recorder{}
	if _, err := s.Model().Run(context.Background(), s.Source(0), rec, sim.RunOptions{}); err != nil {
		b.Fatal(err)
	}
	for _, spec := range []string{placement.NameRollingHorizon, rollout.Name + ":base_policy=2", rollout.Name + ":base_policy=2;future_law=1"} {
		name, params, err := policy.ParsePlacementSpec(spec)
		if err != nil {
			b.Fatal(err)
		}
		pol, err := policy.NewPlacement(name, policy.PlacementConfig{Params: params, Model: s.PlacementModel()})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(spec, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := pol.Place(rec.reqs[i%len(rec.reqs)]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

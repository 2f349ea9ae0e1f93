package placement

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

func TestFamiliesDeclareValidParams(t *testing.T) {
	for _, name := range []string{NameRecedingHorizon, NameRollingHorizon, NameStateThreshold, NameRecedingKnobs} {
		specs := policy.PlacementParams(name)
		if len(specs) == 0 {
			t.Fatalf("%s declares no parameters", name)
		}
		def := map[string]float64{}
		for _, p := range specs {
			if err := p.Validate(p.Default); err != nil {
				t.Errorf("%s: default of %s invalid: %v", name, p.Name, err)
			}
			def[p.Name] = p.Default
		}
		if _, err := policy.NewPlacement(name, policy.PlacementConfig{Params: def}); err != nil {
			t.Errorf("%s with its defaults: %v", name, err)
		}
	}
	if policy.PlacementParams(NameGreedy) != nil {
		t.Error("greedy declares parameters")
	}
}

func TestResolveParamsErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		family string
		params map[string]float64
	}{
		{"unknown name", NameStateThreshold, map[string]float64{"beta": 1}},
		{"above max", NameStateThreshold, map[string]float64{"ratio": 2}},
		{"below min", NameRecedingKnobs, map[string]float64{"scale": 0}},
		{"not an integer", NameRollingHorizon, map[string]float64{"horizon": 2.5}},
		{"NaN", NameStateThreshold, map[string]float64{"base": math.NaN()}},
		{"params on a family without them", NameRecedingHorizon, map[string]float64{"horizon": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := policy.NewPlacement(tc.family, policy.PlacementConfig{Params: tc.params}); !errors.Is(err, policy.ErrInvalidConfig) {
				t.Errorf("got %v, want policy.ErrInvalidConfig", err)
			}
		})
	}
}

func randomRequests(seed uint64, count, n, maxR int) []*policy.PlacementRequest {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]*policy.PlacementRequest, count)
	for i := range out {
		r := 1 + rng.IntN(maxR)
		free := r + rng.IntN(n-r+1)
		out[i] = &policy.PlacementRequest{Free: freeSlots(free), X: 100 * rng.Float64(), R: r, JobsInSystem: rng.IntN(6), Waiting: rng.IntN(3)}
	}
	return out
}

// TestRecedingKnobsDefaultsAreRecedingHorizon: with κ = 1 and σ = 1 the
// family takes exactly Theorem 4's decisions, request by request.
func TestRecedingKnobsDefaultsAreRecedingHorizon(t *testing.T) {
	rh, err := NewRecedingHorizon(policy.PlacementConfig{Window: 50})
	if err != nil {
		t.Fatal(err)
	}
	kn, err := NewRecedingKnobs(policy.PlacementConfig{Window: 50})
	if err != nil {
		t.Fatal(err)
	}
	skips := 0
	for i, req := range randomRequests(3, 2000, 40, 6) {
		a, err1 := rh.Place(req)
		b, err2 := kn.Place(req)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.Equal(a.Positions, b.Positions) {
			t.Fatalf("request %d: receding-horizon %v, knobs %v", i, a.Positions, b.Positions)
		}
		if a.Positions[0] > 0 {
			skips++
		}
	}
	if skips == 0 {
		t.Error("no request skipped: the test does not exercise the threshold")
	}
}

// TestStateThreshold checks the rule's properties: valid positions, the
// free-fraction cap, greedy when m = 0, a skip that does not grow with y,
// and the window estimate agreeing with the exact law on a large window.
func TestStateThreshold(t *testing.T) {
	law, err := models.NewJointWorkload([]models.JointPoint{{Data: 10, Reduces: 1, Prob: 0.5}, {Data: 80, Reduces: 2, Prob: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := randomRequests(5, 3000, 60, 4)
	t.Run("greedy when m = 0", func(t *testing.T) {
		p, _ := NewStateThreshold(policy.PlacementConfig{Params: map[string]float64{"base": 0, "per-job": 0, "per-waiting": 0}})
		for _, req := range reqs {
			d, err := p.Place(req)
			if err != nil || d.Positions[0] != 0 {
				t.Fatalf("m = 0 skipped: %v %v", d.Positions, err)
			}
		}
	})
	t.Run("cap and validity", func(t *testing.T) {
		p, _ := NewStateThreshold(policy.PlacementConfig{Params: map[string]float64{"base": 10, "free-fraction": 0.5}})
		for _, req := range reqs {
			d, err := p.Place(req)
			if err != nil {
				t.Fatal(err)
			}
			validPositions(t, "state-threshold", d.Positions, req.R, len(req.Free))
			if s := d.Positions[0]; s > (len(req.Free)-req.R)/2 {
				t.Fatalf("skip %d above ⌊0.5·(%d − %d)⌋", s, len(req.Free), req.R)
			}
		}
	})
	t.Run("skip non-increasing in y", func(t *testing.T) {
		p, _ := NewStateThreshold(policy.PlacementConfig{Workload: law, Params: map[string]float64{"base": 3}})
		prev := math.MaxInt
		for x := 0.0; x <= 100; x += 0.5 {
			d, err := p.Place(&policy.PlacementRequest{Free: freeSlots(30), X: x, R: 1})
			if err != nil {
				t.Fatal(err)
			}
			if d.Positions[0] > prev {
				t.Fatalf("y = %v skips %d > %d skipped by a smaller y", x, d.Positions[0], prev)
			}
			prev = d.Positions[0]
		}
		if prev != 0 {
			t.Errorf("the largest y still skips %d", prev)
		}
	})
	t.Run("window estimate converges to the law", func(t *testing.T) {
		exact, _ := NewStateThreshold(policy.PlacementConfig{Workload: law})
		est, _ := NewStateThreshold(policy.PlacementConfig{Params: map[string]float64{"window": 2000}})
		rng := rand.New(rand.NewPCG(9, 9))
		for range 2000 {
			x, r := law.Sample(rng)
			if _, err := est.Place(&policy.PlacementRequest{Free: freeSlots(10), X: x, R: r}); err != nil {
				t.Fatal(err)
			}
		}
		e, w := exact.(*StateThreshold), est.(*StateThreshold)
		for _, y := range []float64{0, 5, 10, 39, 41, 100} {
			if d1, d2 := e.demand(y), w.demand(y); math.Abs(d1-d2) > 0.1 {
				t.Errorf("D(%v): exact %v, window %v", y, d1, d2)
			}
		}
	})
}

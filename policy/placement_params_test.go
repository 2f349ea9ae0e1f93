package policy

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/optd/optd/models"
)

func TestFamiliesDeclareValidParams(t *testing.T) {
	for _, name := range []string{NameRecedingHorizon, NameRollingHorizon, NameStateThreshold, NameRecedingKnobs} {
		specs := PlacementParams(name)
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
		if _, err := NewPlacement(name, PlacementConfig{Params: def}); err != nil {
			t.Errorf("%s with its defaults: %v", name, err)
		}
	}
	if PlacementParams(NameGreedy) != nil {
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
			if _, err := NewPlacement(tc.family, PlacementConfig{Params: tc.params}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestRegisterPlacementFamilyRejectsBadDeclarations(t *testing.T) {
	f := func(PlacementConfig) (Placement, error) { return Greedy{}, nil }
	for _, tc := range []struct {
		name   string
		params []ParamSpec
	}{
		{"empty name", []ParamSpec{{Name: "", Max: 1}}},
		{"separator in name", []ParamSpec{{Name: "a;b", Max: 1}}},
		{"default outside", []ParamSpec{{Name: "a", Min: 0, Max: 1, Default: 2}}},
		{"log with min 0", []ParamSpec{{Name: "a", Min: 0, Max: 1, Log: true}}},
		{"twice", []ParamSpec{{Name: "a", Max: 1}, {Name: "a", Max: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := RegisterPlacementFamily("test-bad-"+tc.name, f, tc.params); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
			if slices.Contains(PlacementNames(), "test-bad-"+tc.name) {
				t.Error("registered despite the error")
			}
		})
	}
}

func TestPlacementSpecRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		name   string
		params map[string]float64
	}{
		{"greedy", "greedy", nil},
		{"state-threshold:base=2;ratio=0.25", "state-threshold", map[string]float64{"base": 2, "ratio": 0.25}},
		{" rolling-horizon:horizon=3 ", "rolling-horizon", map[string]float64{"horizon": 3}},
	} {
		name, params, err := ParsePlacementSpec(tc.spec)
		if err != nil || name != tc.name || len(params) != len(tc.params) {
			t.Fatalf("%q: got %q %v %v", tc.spec, name, params, err)
		}
		for k, v := range tc.params {
			if params[k] != v {
				t.Errorf("%q: %s = %v, want %v", tc.spec, k, params[k], v)
			}
		}
		n2, p2, err := ParsePlacementSpec(FormatPlacementSpec(name, params))
		if err != nil || n2 != name || len(p2) != len(params) {
			t.Errorf("%q: round trip gave %q %v %v", tc.spec, n2, p2, err)
		}
	}
	for _, bad := range []string{"", ":a=1", "x:", "x:a", "x:a=1;a=2", "x:a=NaN", "x:a=1e999", "x:=1", "x:a=1x"} {
		if _, _, err := ParsePlacementSpec(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q: got %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func FuzzParsePlacementSpec(f *testing.F) {
	for _, s := range []string{"greedy", "state-threshold:base=2;ratio=0.25", "x:a=1;a=2", ":", "a:b=1e308;c=-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		name, params, err := ParsePlacementSpec(spec)
		if err != nil {
			return
		}
		n2, p2, err := ParsePlacementSpec(FormatPlacementSpec(name, params))
		if err != nil || n2 != name || len(p2) != len(params) {
			t.Fatalf("%q: round trip gave %q %v %v", spec, n2, p2, err)
		}
		for k, v := range params {
			if p2[k] != v {
				t.Fatalf("%q: %s = %v after the round trip, was %v", spec, k, p2[k], v)
			}
		}
	})
}

// randomRequests draws requests on a cluster of n slots with costs 1..n.
func randomRequests(seed uint64, count, n, maxR int) []*PlacementRequest {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]*PlacementRequest, count)
	for i := range out {
		r := 1 + rng.IntN(maxR)
		free := r + rng.IntN(n-r+1)
		out[i] = &PlacementRequest{Free: freeSlots(free), X: 100 * rng.Float64(), R: r, JobsInSystem: rng.IntN(6), Waiting: rng.IntN(3)}
	}
	return out
}

// TestRecedingKnobsDefaultsAreRecedingHorizon: with κ = 1 and σ = 1 the
// family takes exactly Theorem 4's decisions, request by request.
func TestRecedingKnobsDefaultsAreRecedingHorizon(t *testing.T) {
	rh, err := NewRecedingHorizon(PlacementConfig{Window: 50})
	if err != nil {
		t.Fatal(err)
	}
	kn, err := NewRecedingKnobs(PlacementConfig{Window: 50})
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
		p, _ := NewStateThreshold(PlacementConfig{Params: map[string]float64{"base": 0, "per-job": 0, "per-waiting": 0}})
		for _, req := range reqs {
			d, err := p.Place(req)
			if err != nil || d.Positions[0] != 0 {
				t.Fatalf("m = 0 skipped: %v %v", d.Positions, err)
			}
		}
	})
	t.Run("cap and validity", func(t *testing.T) {
		p, _ := NewStateThreshold(PlacementConfig{Params: map[string]float64{"base": 10, "free-fraction": 0.5}})
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
		p, _ := NewStateThreshold(PlacementConfig{Workload: law, Params: map[string]float64{"base": 3}})
		prev := math.MaxInt
		for x := 0.0; x <= 100; x += 0.5 {
			d, err := p.Place(&PlacementRequest{Free: freeSlots(30), X: x, R: 1})
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
		exact, _ := NewStateThreshold(PlacementConfig{Workload: law})
		est, _ := NewStateThreshold(PlacementConfig{Params: map[string]float64{"window": 2000}})
		rng := rand.New(rand.NewPCG(9, 9))
		for range 2000 {
			x, r := law.Sample(rng)
			if _, err := est.Place(&PlacementRequest{Free: freeSlots(10), X: x, R: r}); err != nil {
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

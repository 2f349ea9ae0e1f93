package search

import (
	"context"
	"errors"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"
)

// bowl is a synthetic problem with a known optimum: metric(x, rep) =
// Σ_k w_k·(t_k − x_k)² + 10 + noise(rep), with a noise that depends only on
// the replication (common random numbers: it cancels in every comparison).
type bowl struct {
	sp     Space
	target []float64
	mu     sync.Mutex
	reps   map[int]bool
	fail   error
	sleep  time.Duration
}

func newBowl() *bowl {
	return &bowl{
		sp: Space{
			{Name: "a", Min: -5, Max: 5, Default: 4},
			{Name: "b", Min: 0.01, Max: 100, Default: 50, Log: true},
			{Name: "n", Min: 1, Max: 40, Default: 30, Integer: true},
		},
		target: []float64{-1.5, 0.3, 7},
		reps:   map[int]bool{},
	}
}

func (b *bowl) Space() Space { return b.sp }

func (b *bowl) Metric(ctx context.Context, x []float64, rep int) (float64, error) {
	b.mu.Lock()
	b.reps[rep] = true
	b.mu.Unlock()
	if b.fail != nil {
		return 0, b.fail
	}
	if b.sleep > 0 {
		time.Sleep(b.sleep)
	}
	noise := math.Sin(float64(rep%1000)*1.7) + float64(rep/ValidationBase)*0.01
	f := 10 + noise
	f += (x[0] - b.target[0]) * (x[0] - b.target[0])
	f += 4 * math.Pow(math.Log(x[1])-math.Log(b.target[1]), 2)
	f += 0.01 * (x[2] - b.target[2]) * (x[2] - b.target[2])
	return f, ctx.Err()
}

func (b *bowl) References() []string { return []string{"published"} }

func (b *bowl) ReferenceMetric(ctx context.Context, _ string, rep int) (float64, error) {
	return b.Metric(ctx, []float64{0, 1, 20}, rep)
}

func (b *bowl) LowerBounds(_ context.Context, rep int) (map[string]float64, error) {
	return map[string]float64{"floor": 9 + math.Sin(float64(rep%1000)*1.7)}, nil
}

func TestRunFindsTheOptimum(t *testing.T) {
	for _, method := range []string{MethodCMAES, MethodNelderMead} {
		t.Run(method, func(t *testing.T) {
			b := newBowl()
			res, err := Run(context.Background(), b, Options{Method: method, Evaluations: 400, Replications: 3, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			p := res.Params
			if math.Abs(p["a"]-b.target[0]) > 0.1 || math.Abs(math.Log(p["b"]/b.target[1])) > 0.1 || math.Abs(p["n"]-b.target[2]) > 2 {
				t.Errorf("best %v, want near %v", p, b.target)
			}
			if p["n"] != math.Round(p["n"]) {
				t.Errorf("integer parameter n = %v", p["n"])
			}
			if res.Simulated > 400+2 || res.Evaluations > 400+1 {
				t.Errorf("budget exceeded: %d calls, %d simulated", res.Evaluations, res.Simulated)
			}
			// The search phase: paired difference equals the difference of
			// means, and its interval is 0 wide (the noise is common).
			s := res.Search
			if d := s.Best.Mean - s.Default.Mean; math.Abs(d-s.BestMinusDefault.Mean) > 1e-9 || d >= 0 {
				t.Errorf("best − default = %v, paired %v", d, s.BestMinusDefault.Mean)
			}
			if s.BestMinusDefault.CI95 == nil || *s.BestMinusDefault.CI95 > 1e-9 {
				t.Errorf("paired CI %v, want 0 under common random numbers", s.BestMinusDefault.CI95)
			}
			v := res.Validation
			if v == nil || v.Replications != 3 || v.FirstReplication != ValidationBase {
				t.Fatalf("validation %+v", v)
			}
			for rep := range b.reps {
				if rep >= 3 && rep < ValidationBase {
					t.Errorf("replication %d is neither a search nor a validation replication", rep)
				}
			}
			if !v.BestMinusReference["published"].Excludes0() || v.BestMinusReference["published"].Mean >= 0 {
				t.Errorf("best vs published: %+v", v.BestMinusReference["published"])
			}
			if v.BestLowerBound == nil || *v.BestLowerBound > v.Best.Mean || v.Gap == nil || *v.Gap < 0 {
				t.Errorf("bound %v gap %v best %v", v.BestLowerBound, v.Gap, v.Best.Mean)
			}
		})
	}
}

func TestRunIsDeterministic(t *testing.T) {
	run := func(workers int) *Result {
		res, err := Run(context.Background(), newBowl(), Options{Evaluations: 60, Replications: 4, Seed: 11, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		res.SearchMS, res.TotalMS = 0, 0
		return res
	}
	a, b := run(1), run(4)
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs with the same seed differ:\n%+v\n%+v", a.Params, b.Params)
	}
	c, err := Run(context.Background(), newBowl(), Options{Evaluations: 60, Replications: 4, Seed: 12})
	if err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(a.History, c.History) {
		t.Error("another seed gave the same CMA-ES samples")
	}
}

func TestRunBudgetsAndErrors(t *testing.T) {
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := Run(ctx, newBowl(), Options{}); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v, want context.Canceled", err)
		}
	})
	t.Run("time budget", func(t *testing.T) {
		b := newBowl()
		b.sleep = 2 * time.Millisecond
		res, err := Run(context.Background(), b, Options{Evaluations: 100000, Replications: 2, Time: 100 * time.Millisecond, Validation: -1})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != "RuntimeLimit" || res.Simulated >= 100000 {
			t.Errorf("status %s after %d candidates", res.Status, res.Simulated)
		}
		if res.Validation != nil {
			t.Error("validation ran with Validation = -1")
		}
	})
	t.Run("metric error", func(t *testing.T) {
		b := newBowl()
		b.fail = errors.New("boom")
		if _, err := Run(context.Background(), b, Options{}); err == nil || err.Error() != "boom" {
			t.Errorf("got %v, want boom", err)
		}
	})
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"method", Options{Method: "bfgs"}},
		{"evaluations", Options{Evaluations: -1}},
		{"replications", Options{Replications: -2}},
		{"step", Options{Step: 2}},
		{"start length", Options{Start: []float64{1}}},
		{"start outside", Options{Start: []float64{9, 1, 1}}},
		{"time", Options{Time: -time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Run(context.Background(), newBowl(), tc.opts); !errors.Is(err, ErrInvalid) {
				t.Errorf("got %v, want ErrInvalid", err)
			}
		})
	}
}

func TestPhaseSummarizeIsPaired(t *testing.T) {
	p := &Phase{Raw: []RepFigures{
		{Best: 10, Default: 12, References: map[string]float64{"r": 11}, LowerBounds: map[string]float64{"lb": 5}},
		{Best: 20, Default: 23, References: map[string]float64{"r": 21}, LowerBounds: map[string]float64{"lb": 6}},
		{Best: 30, Default: 31, References: map[string]float64{"r": 32}, LowerBounds: map[string]float64{"lb": 7}},
	}}
	if err := p.summarize(); err != nil {
		t.Fatal(err)
	}
	// best − default = −2, −3, −1: mean −2, s = 1, t_{0.975,2} = 4.3027.
	if d := p.BestMinusDefault; math.Abs(d.Mean+2) > 1e-12 || math.Abs(*d.CI95-4.302652729911275/math.Sqrt(3)) > 1e-9 {
		t.Errorf("paired best − default %v ± %v", d.Mean, *d.CI95)
	}
	if math.Abs(p.Best.Mean-20) > 1e-12 || math.Abs(*p.BestLowerBound-6) > 1e-12 || math.Abs(*p.Gap-(20-6)/6.0) > 1e-12 {
		t.Errorf("best %v bound %v gap %v", p.Best.Mean, *p.BestLowerBound, *p.Gap)
	}
	p.Raw[2].References = map[string]float64{}
	if err := p.summarize(); err == nil {
		t.Error("a missing reference was accepted")
	}
}

// TestProgressCountsEachPhase: the validation's counter starts at 0 and
// ends exactly at its total (the best, the defaults, each reference and
// the bound on every validation replication), so a progress bar never sits
// at "total of total" while work remains; the search's counter never
// exceeds the total it shows.
func TestProgressCountsEachPhase(t *testing.T) {
	for _, validation := range []int{2, 5} {
		var mu sync.Mutex
		var val []Status
		_, err := Run(context.Background(), newBowl(), Options{
			Evaluations: 20, Replications: 3, Validation: validation, Seed: 3, Workers: 2,
			Progress: func(s Status) {
				if s.Simulations > s.SimulationsTotal {
					t.Errorf("%s: %d of %d simulations", s.Phase, s.Simulations, s.SimulationsTotal)
				}
				if s.Phase == PhaseValidation {
					mu.Lock()
					val = append(val, s)
					mu.Unlock()
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		want := validation * (2 + 1 + 1) // best, defaults, "published", "floor"
		if len(val) != want {
			t.Fatalf("validation %d: %d progress calls, want %d", validation, len(val), want)
		}
		for i, s := range val {
			if s.Simulations != i+1 || s.SimulationsTotal != want {
				t.Errorf("validation %d: call %d reports %d of %d, want %d of %d", validation, i, s.Simulations, s.SimulationsTotal, i+1, want)
			}
		}
	}
}

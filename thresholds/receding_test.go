package thresholds

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

func TestEstimatorWindow(t *testing.T) {
	e, err := NewEstimator(3)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := e.Estimate(); ok {
		t.Fatal("estimate before any observation")
	}
	obs := []Observation{
		{JobsInSystem: 4, Data: 10, Reduces: 2}, // y = 5
		{JobsInSystem: 0, Data: 3, Reduces: 1},  // y = 3
		{JobsInSystem: 2, Data: 8, Reduces: 4},  // y = 2
		{JobsInSystem: 6, Data: 0, Reduces: 5},  // y = 0
		{JobsInSystem: 1, Data: 12, Reduces: 3}, // y = 4
	}
	// Expected (N̄, Ȳ) after each observation: the first equals (N_1, X_1/R_1).
	want := [][2]float64{{4, 5}, {2, 4}, {2, 10.0 / 3}, {8.0 / 3, 5.0 / 3}, {3, 2}}
	for i, o := range obs {
		if err := e.Observe(o); err != nil {
			t.Fatal(err)
		}
		est, ok := e.Estimate()
		if !ok {
			t.Fatal("no estimate")
		}
		p := want[i][0] / (2*want[i][0] + 1)
		if !scalar.EqualWithinAbsOrRel(est.MeanJobs, want[i][0], exactRelTol, exactRelTol) ||
			!scalar.EqualWithinAbsOrRel(est.MeanY, want[i][1], exactRelTol, exactRelTol) ||
			!scalar.EqualWithinAbsOrRel(est.P, p, exactRelTol, exactRelTol) ||
			!scalar.EqualWithinAbsOrRel(est.Threshold, p*want[i][1], exactRelTol, exactRelTol) ||
			est.Samples != min(i+1, 3) {
			t.Errorf("after %d observations: %+v, want N̄ %v Ȳ %v p %v", i+1, est, want[i][0], want[i][1], p)
		}
	}
	if got := e.Observations(); !slices.Equal(got, obs[2:]) {
		t.Errorf("window %v, want %v", got, obs[2:])
	}
	if e.Seen() != 5 {
		t.Errorf("seen %d", e.Seen())
	}
	for _, bad := range []Observation{{JobsInSystem: -1, Data: 1, Reduces: 1}, {Data: math.NaN(), Reduces: 1}, {Data: -2, Reduces: 1}, {Data: 1, Reduces: 0}} {
		if err := e.Observe(bad); !errors.Is(err, ErrEstimator) {
			t.Errorf("Observe(%+v): err = %v", bad, err)
		}
	}
	if _, err := NewEstimator(-1); !errors.Is(err, ErrEstimator) {
		t.Errorf("window −1: err = %v", err)
	}
	if d, _ := NewEstimator(0); d.Window() != DefaultWindow {
		t.Errorf("default window %d", d.Window())
	}
}

// TestEstimatorLongRun checks the running sums against a direct average over
// the window after many replacements (the periodic re-summation).
func TestEstimatorLongRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	e, _ := NewEstimator(7)
	for range 10000 {
		o := Observation{JobsInSystem: rng.IntN(50), Data: rng.ExpFloat64() * 1e6, Reduces: 1 + rng.IntN(10)}
		if err := e.Observe(o); err != nil {
			t.Fatal(err)
		}
	}
	var sn, sy float64
	w := e.Observations()
	for _, o := range w {
		sn += float64(o.JobsInSystem)
		sy += o.Data / float64(o.Reduces)
	}
	est, _ := e.Estimate()
	if !scalar.EqualWithinAbsOrRel(est.MeanJobs, sn/7, 1e-12, 1e-12) || !scalar.EqualWithinAbsOrRel(est.MeanY, sy/7, 1e-9, 1e-9) {
		t.Errorf("estimate %+v, direct N̄ %v Ȳ %v", est, sn/7, sy/7)
	}
}

func TestEstimatorSnapshotRestore(t *testing.T) {
	e, _ := NewEstimator(4)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 6 {
		_ = e.Observe(Observation{JobsInSystem: i, Data: float64(rng.IntN(100)), Reduces: 1 + rng.IntN(3)})
	}
	raw, err := json.Marshal(e.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	var s EstimatorState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	r, err := RestoreEstimator(s)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := e.Estimate()
	b, _ := r.Estimate()
	if a != b || r.Seen() != e.Seen() || !slices.Equal(r.Observations(), e.Observations()) {
		t.Fatalf("restored %+v, original %+v", b, a)
	}
	// Both continue identically.
	for i := range 5 {
		o := Observation{JobsInSystem: i, Data: float64(i * 3), Reduces: 2}
		_ = e.Observe(o)
		_ = r.Observe(o)
		a, _ = e.Estimate()
		b, _ = r.Estimate()
		if !scalar.EqualWithinAbsOrRel(a.MeanY, b.MeanY, exactRelTol, exactRelTol) || a.MeanJobs != b.MeanJobs || !slices.Equal(r.Observations(), e.Observations()) {
			t.Fatalf("step %d: restored %+v, original %+v", i, b, a)
		}
	}
	for _, c := range []struct {
		name string
		s    EstimatorState
	}{
		{"zero window", EstimatorState{Window: 0}},
		{"too many", EstimatorState{Window: 1, Seen: 2, Observations: []Observation{{Data: 1, Reduces: 1}, {Data: 1, Reduces: 1}}}},
		{"seen too small", EstimatorState{Window: 3, Seen: 1, Observations: []Observation{{Data: 1, Reduces: 1}, {Data: 1, Reduces: 1}}}},
		{"bad observation", EstimatorState{Window: 3, Seen: 1, Observations: []Observation{{Data: 1, Reduces: 0}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := RestoreEstimator(c.s); !errors.Is(err, ErrEstimator) {
				t.Errorf("err = %v, want ErrEstimator", err)
			}
		})
	}
}

// FuzzRestoreEstimator: arbitrary snapshot JSON never panics; an accepted
// snapshot gives a finite estimate and survives a JSON round trip.
func FuzzRestoreEstimator(f *testing.F) {
	f.Add([]byte(`{"window":3,"observations":[{"jobs_in_system":2,"data":10,"reduces":2}],"seen":5}`))
	f.Add([]byte(`{"window":1,"observations":[],"seen":0}`))
	f.Add([]byte(`{"window":-1}`))
	f.Add([]byte(`{"window":2,"observations":[{"jobs_in_system":1e300,"data":1e308,"reduces":1},{"data":1e308,"reduces":1}],"seen":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var s EstimatorState
		if json.Unmarshal(data, &s) != nil {
			return
		}
		e, err := RestoreEstimator(s)
		if err != nil {
			return
		}
		if est, ok := e.Estimate(); ok && (math.IsNaN(est.Threshold) || math.IsNaN(est.P) || est.P < 0 || est.P >= 0.5) {
			t.Fatalf("estimate %+v", est)
		}
		s2 := e.Snapshot()
		if s2.Window != s.Window || s2.Seen != s.Seen || len(s2.Observations) != len(s.Observations) {
			t.Fatalf("round trip %+v → %+v", s, s2)
		}
	})
}

// TestRecedingHorizonIsOptimalForTwoJobs checks DecideRecedingHorizon
// against eq. (13) of the paper minimised over every v-subset B of the 2v
// cheapest slots (a second method: brute force instead of Lemma 3).
func TestRecedingHorizonIsOptimalForTwoJobs(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for c := range 200 {
		v := 1 + rng.IntN(5)
		h := make([]float64, 2*v)
		for i := range h {
			h[i] = rng.Float64() * 100
		}
		slices.Sort(h)
		nbar := rng.Float64() * 20
		p := nbar / (2*nbar + 1)
		m := rng.Float64() * 10 // E[X/R]
		u := rng.Float64() * 30 * float64(v)
		est := Estimate{Samples: 1, MeanJobs: nbar, MeanY: m, P: p, Threshold: p * m}
		d, err := DecideRecedingHorizon(est, 2*v, u, v)
		if err != nil {
			t.Fatal(err)
		}
		cost := func(b uint) float64 { // eq. (13)
			var hb, hc, h1 float64
			for i := range 2 * v {
				if b&(1<<i) != 0 {
					hb += h[i]
				} else {
					hc += h[i]
				}
				if i < v {
					h1 += h[i]
				}
			}
			return u/float64(v)*hb + p*m*hc + (1-p)*m*h1
		}
		best := math.Inf(1)
		for b := uint(0); b < 1<<(2*v); b++ {
			if bits.OnesCount(b) == v {
				best = min(best, cost(b))
			}
		}
		var chosen uint
		for _, pos := range d.Positions {
			chosen |= 1 << pos
		}
		if got := cost(chosen); !scalar.EqualWithinAbsOrRel(got, best, 1e-12, 1e-12) {
			t.Errorf("case %d: rule %s costs %v, optimum %v (y %v, threshold %v)", c, d.Rule, got, best, u/float64(v), p*m)
		}
	}
}

func TestDecideRecedingHorizon(t *testing.T) {
	est := Estimate{Samples: 5, MeanJobs: 2, MeanY: 10, P: 0.4, Threshold: 4}
	for _, c := range []struct {
		free int
		x    float64
		r    int
		rule RecedingRule
		want []int
	}{
		{10, 9, 2, RuleCheapest, []int{0, 1}}, // y = 4.5 ≥ 4
		{10, 8, 2, RuleCheapest, []int{0, 1}}, // y = 4 = threshold
		{10, 6, 2, RuleSkip, []int{2, 3}},     // y = 3 < 4
		{3, 6, 2, RuleFewSlots, []int{0, 1}},  // 2 ≤ free < 4
		{4, 2, 2, RuleSkip, []int{2, 3}},      // exactly 2r free
		{10, 0, 1, RuleSkip, []int{1}},        // no data
		{1, 0, 1, RuleFewSlots, []int{0}},     // one slot
		{12, 100, 4, RuleCheapest, []int{0, 1, 2, 3}},
	} {
		t.Run(fmt.Sprintf("free=%d/x=%v/r=%d", c.free, c.x, c.r), func(t *testing.T) {
			d, err := DecideRecedingHorizon(est, c.free, c.x, c.r)
			if err != nil {
				t.Fatal(err)
			}
			if d.Rule != c.rule || !slices.Equal(d.Positions, c.want) || d.Estimate != est {
				t.Errorf("got %+v, want %s %v", d, c.rule, c.want)
			}
		})
	}
	if _, err := DecideRecedingHorizon(est, 1, 1, 2); !errors.Is(err, ErrNoFreeSlots) {
		t.Errorf("err = %v", err)
	}
	if _, err := DecideRecedingHorizon(est, 5, -1, 2); !errors.Is(err, ErrJob) {
		t.Errorf("err = %v", err)
	}
	// The stateful policy observes before deciding: the first job compares
	// its own y with p·y (p = N_1/(2N_1+1) < 1/2), so it takes the cheapest.
	pol, err := NewRecedingHorizon(0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := pol.Decide(Observation{JobsInSystem: 3, Data: 6, Reduces: 2}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Rule != RuleCheapest || d.Estimate.MeanY != 3 || d.Estimate.MeanJobs != 3 || !scalar.EqualWithinAbsOrRel(d.Estimate.P, 3.0/7, exactRelTol, exactRelTol) {
		t.Errorf("first decision %+v", d)
	}
	d, err = pol.Decide(Observation{JobsInSystem: 3, Data: 0.5, Reduces: 1}, 10)
	if err != nil {
		t.Fatal(err)
	}
	// Ȳ = (3 + 0.5)/2 = 1.75, p = 3/7, threshold 0.75 > 0.5: skip.
	if d.Rule != RuleSkip || !slices.Equal(d.Positions, []int{1}) || !scalar.EqualWithinAbsOrRel(d.Estimate.Threshold, 0.75, exactRelTol, exactRelTol) {
		t.Errorf("second decision %+v", d)
	}
}

// TestEstimatorNewest: Newest(n) is the last n of the window (all of it for
// n beyond its length, none for n ≤ 0), before and after the ring wraps.
func TestEstimatorNewest(t *testing.T) {
	e, err := NewEstimator(4)
	if err != nil {
		t.Fatal(err)
	}
	var all []Observation
	for i := range 11 {
		o := Observation{JobsInSystem: i, Data: float64(i), Reduces: 1}
		if err := e.Observe(o); err != nil {
			t.Fatal(err)
		}
		all = append(all, o)
		window := all[max(0, len(all)-4):]
		for n := -1; n <= 6; n++ {
			want := window[len(window)-max(0, min(n, len(window))):]
			if got := e.Newest(n); !slices.Equal(got, want) {
				t.Fatalf("after %d observations, Newest(%d) = %v, want %v", i+1, n, got, want)
			}
		}
	}
}

package mdp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/optd/optd/sim"
)

// TestQueueMartingaleMeanZero: M/n of (C1) has mean zero over
// replications (99.9% interval) on the Fig. 9 setting at ρ = 0.9 (unlimited
// waiting room), on mdp-small (a finite one: arrivals lost) and on an
// overloaded generated scenario (ρ = 2); and the test sees a wrong
// generator (the finite room ignored).
func TestQueueMartingaleMeanZero(t *testing.T) {
	reps, jobs := 40, 800
	if testing.Short() {
		reps, jobs = 25, 400
	}
	load := func(path string) *sim.Scenario {
		s, err := sim.LoadScenario(path)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	overloaded, _ := genPlacementScenario(t, 1007, jobs, reps)
	for _, s := range []*sim.Scenario{load("../search/testdata/fig9-rho0.9.json"), load("../search/testdata/mdp-small.json"), overloaded} {
		s.Jobs, s.WarmupJobs, s.Replications = jobs, 20, reps
		capacity := -1
		if s.MaxWaiting >= 0 {
			capacity = s.K + s.MaxWaiting
		}
		var right, wrong []float64
		for rep := range reps {
			r := cheapestRecords(t, s, rep)
			right = append(right, queueMartingale(r.Records, s.ArrivalRate, s.ServiceRate, capacity))
			wrong = append(wrong, queueMartingale(r.Records, s.ArrivalRate, s.ServiceRate, -1))
		}
		m, half := sim.MeanCI95(right)
		t.Logf("K = %d, λ = %g, room %d: M/n %.4g ± %.3g", s.K, s.ArrivalRate, s.MaxWaiting, m, half)
		if math.Abs(m) > 3.3/1.96*half || half == 0 {
			t.Errorf("K = %d, λ = %g: M/n has mean %.4g ± %.3g, not zero", s.K, s.ArrivalRate, m, half)
		}
		if capacity >= 0 {
			if m, half := sim.MeanCI95(wrong); math.Abs(m) <= 3.3/1.96*half {
				t.Errorf("K = %d, λ = %g: the generator without the finite room gives %.4g ± %.3g, not caught", s.K, s.ArrivalRate, m, half)
			}
		}
	}
}

// TestControlledMean: on synthetic replications y = 10 + 3x + noise with
// E[x] = 0, the leave-one-out controlled mean of
// controlledMinReps replications is unbiased (its mean over 4000 trials
// within 4 standard errors of 10) and its spread is below the plain
// mean's.
func TestControlledMean(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const trials = 4000
	var plain, ctl []float64
	for range trials {
		ys, xs := make([]float64, controlledMinReps), make([]float64, controlledMinReps)
		for r := range ys {
			xs[r] = rng.NormFloat64()
			ys[r] = 10 + 3*xs[r] + 0.5*rng.NormFloat64()
		}
		m, _ := sim.MeanCI95(ys)
		c, _ := controlledMean(ys, xs)
		plain, ctl = append(plain, m), append(ctl, c)
	}
	mp, hp := sim.MeanCI95(plain)
	mc, hc := sim.MeanCI95(ctl)
	t.Logf("plain %.4f ± %.4f, controlled %.4f ± %.4f", mp, hp, mc, hc)
	if math.Abs(mc-10) > 4*hc/1.96 {
		t.Errorf("controlled mean %.4f ± %.4f over %d trials, not 10", mc, hc, trials)
	}
	if !(hc < hp/2) {
		t.Errorf("controlled spread %.4g not below half the plain one's %.4g", hc, hp)
	}
	few := []float64{1, 2, 3, 4, 5}[:min(5, controlledMinReps-1)]
	if m, _ := controlledMean(few, few); m != 3 {
		t.Errorf("%d replications: %v, want the plain mean 3", len(few), m)
	}
}

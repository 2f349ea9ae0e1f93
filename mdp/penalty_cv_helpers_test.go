package mdp

import (
	"cmp"
	"math"
	"slices"

	"github.com/optd/optd/sim"
)

// This file is a control variate for the penalized bound's mean over
// replications (and for the policies' mean costs on the same runs), used
// by make penalty-scale (TestPenaltyScale); the bound itself does not use it.
//
// # A martingale of the queue
//
// The number N(t) of jobs in the system (waiting and in service) is a
// birth-death chain whatever the placement: arrivals at rate λ enter when
// N < cap = K + MaxWaiting (all of them with an unlimited waiting room),
// and, K-limited processor sharing giving the jobs in service one unit of
// capacity together, one of them leaves at rate μ whenever N > 0. For
// f(N) = N² its generator is
//
//	(𝒢f)(N) = λ·1{N < cap}·(2N + 1) + μ·1{N > 0}·(1 − 2N),
//
// so by Dynkin's formula, with τ the arrival time of a run's last job (a
// stopping time with E[τ] = n/λ, N ≤ n before it, so every term is
// bounded and optional stopping applies, at any load)
//
//	M = N(τ)² − ∫_0^τ (𝒢f)(N(t)) dt,   E[M] = 0.                       (C1)
//
// M/n is large when the run was congested (∫ N dt, the sum of the jobs'
// times in system, enters with weight 2(μ − λ) roughly), which is what
// moves the costs and the bounds of a run: on the Fig. 9 setting at
// ρ = 0.9 (16 runs of 10,000 counted jobs) its correlation with the
// Lagrangian hindsight bound per job was 0.96, with greedy's and
// state-threshold's mean costs 0.95.
//
// # The controlled mean
//
// For replications y_r with control variates x_r = M_r/n_r (E[x] = 0),
// controlledMean returns the mean of y_r − β_{−r}·x_r, β_{−r} the
// least-squares slope of y on x over the OTHER replications: β_{−r} is
// independent of replication r, so E[β_{−r}·x_r] = E[β_{−r}]·E[x_r] = 0 and
// the controlled mean has exactly the mean of y (a bound stays a bound in
// expectation; a slope fitted on all replications would bias it by
// O(1/replications)). Its 95% half-width is the Student-t one of the
// adjusted values, approximate: they share data through the slopes. With
// few replications a slope from the others is itself noisy (on 5 runs of
// 2,000 jobs at ρ = 0.9 one congested run moved the controlled mean by
// 12% and widened it), so below controlledMinReps replications it is the
// plain mean. On 16 replications of 10,000 jobs at ρ = 0.9 (make
// penalty-scale) it narrowed the penalized bound's 95% half-width from
// 7.69 to 3.21 per job (4.8% to 2.0% of the bound).

// controlledMinReps is the least number of replications controlledMean
// controls.
const controlledMinReps = 8

// queueMartingale is M/n of (C1) for the records of one run (every arrival,
// in arrival order; lost jobs change nothing), with arrival rate lambda,
// service rate mu and room for capacity jobs in the system (< 0:
// unlimited). It needs Poisson arrivals and exponential work (a workload
// scenario), not a trace's arrivals.
func queueMartingale(recs []sim.JobRecord, lambda, mu float64, capacity int) float64 {
	type event struct {
		t float64
		d int
	}
	var evs []event
	tau := math.Inf(-1)
	for _, r := range recs {
		tau = max(tau, r.Arrival)
		if !r.Lost {
			evs = append(evs, event{r.Arrival, 1}, event{r.End, -1})
		}
	}
	if len(recs) == 0 {
		return 0
	}
	// Arrivals before departures at equal times: the clock of N is
	// right-continuous, and an arrival at τ belongs to [0, τ].
	slices.SortStableFunc(evs, func(a, b event) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(b.d, a.d)) })
	n, last, integral := 0, 0.0, 0.0
	for _, e := range evs {
		if e.t > tau || (e.t == tau && e.d < 0) {
			break
		}
		integral += (e.t - last) * queueGenerator(n, lambda, mu, capacity)
		n += e.d
		last = e.t
	}
	integral += (tau - last) * queueGenerator(n, lambda, mu, capacity)
	return (float64(n*n) - integral) / float64(len(recs))
}

// queueGenerator is (𝒢f)(n) of (C1).
func queueGenerator(n int, lambda, mu float64, capacity int) float64 {
	g := 0.0
	if capacity < 0 || n < capacity {
		g += lambda * float64(2*n+1)
	}
	if n > 0 {
		g += mu * float64(1-2*n)
	}
	return g
}

// controlledMean is the leave-one-out controlled mean of ys with control
// variates xs (E[x] = 0) and its approximate 95% half-width (see "The
// controlled mean"); with fewer than controlledMinReps replications, the
// plain mean.
func controlledMean(ys, xs []float64) (mean, half float64) {
	n := len(ys)
	if n < controlledMinReps {
		return sim.MeanCI95(ys)
	}
	adj := make([]float64, n)
	for r := range n {
		var my, mx float64
		for k := range n {
			if k != r {
				my += ys[k] / float64(n-1)
				mx += xs[k] / float64(n-1)
			}
		}
		var sxy, sxx float64
		for k := range n {
			if k != r {
				sxy += (xs[k] - mx) * (ys[k] - my)
				sxx += (xs[k] - mx) * (xs[k] - mx)
			}
		}
		beta := 0.0
		if sxx > 0 {
			beta = sxy / sxx
		}
		adj[r] = ys[r] - beta*xs[r]
	}
	return sim.MeanCI95(adj)
}

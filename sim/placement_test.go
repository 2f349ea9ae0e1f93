package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
)

// Tolerances.
const (
	// exactTol is for quantities equal up to rounding.
	exactTol = 1e-9
	// queueRelTol is the relative tolerance of long-run queue figures
	// against their formulas (several standard errors at the run lengths
	// used).
	queueRelTol = 0.03
)

// funcSource is a job stream from functions of a generator.
type funcSource struct {
	n, i   int
	t      float64
	rng    *rand.Rand
	lambda float64
	work   func(*rand.Rand) float64
	job    func(*rand.Rand) (float64, int)
}

func (s *funcSource) Next() (JobSpec, bool) {
	if s.i >= s.n {
		return JobSpec{}, false
	}
	s.i++
	s.t += s.rng.ExpFloat64() / s.lambda
	x, r := s.job(s.rng)
	return JobSpec{Arrival: s.t, Work: s.work(s.rng), X: x, R: r}, true
}

func oneJob(*rand.Rand) (float64, int) { return 1, 1 }

func mustPolicy(t testing.TB, name string, seed uint64) policy.Placement {
	t.Helper()
	p, err := policy.NewPlacement(name, policy.PlacementConfig{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func equalSlots(n int, c float64) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = c
	}
	return s
}

// TestQueueFormulas checks the K-limited processor-sharing queue against
// closed forms: M/M/1 (any K: exponential work, work-conserving), M/D/1-PS
// (K ≥ jobs present: E[T] = E[B]/(1−ρ), insensitive to the law of B),
// M/D/1-FCFS (K = 1, Pollaczek-Khinchine E[T] = E[B] + ρE[B]/(2(1−ρ))) and
// the M/M/1/1 loss probability ρ/(1+ρ) (K = 1, max_waiting = 0).
func TestQueueFormulas(t *testing.T) {
	const n = 200000
	rho := 0.6
	exp := func(r *rand.Rand) float64 { return r.ExpFloat64() }
	det := func(*rand.Rand) float64 { return 1 }
	for _, c := range []struct {
		name       string
		k, maxWait int
		work       func(*rand.Rand) float64
		sojourn, l float64 // NaN: not checked
		lossProb   float64
	}{
		{"MM1-K=1", 1, -1, exp, 1 / (1 - rho), rho / (1 - rho), 0},
		{"MM1-PS-K=50", 50, -1, exp, 1 / (1 - rho), rho / (1 - rho), 0},
		{"MD1-PS", 50, -1, det, 1 / (1 - rho), rho / (1 - rho), 0},
		{"MD1-FCFS", 1, -1, det, 1 + rho/(2*(1-rho)), math.NaN(), 0},
		{"MM1-loss", 1, 0, exp, 1, math.NaN(), rho / (1 + rho)},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Model{SlotCosts: equalSlots(c.k, 1), K: c.k, MaxWaiting: c.maxWait}
			src := &funcSource{n: n, rng: rand.New(rand.NewPCG(3, 4)), lambda: rho, work: c.work, job: oneJob}
			res, err := m.Run(context.Background(), src, mustPolicy(t, "greedy", 0), RunOptions{Warmup: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if !scalar.EqualWithinRel(res.MeanSojourn, c.sojourn, queueRelTol) {
				t.Errorf("mean sojourn %.4f, want %.4f", res.MeanSojourn, c.sojourn)
			}
			if !math.IsNaN(c.l) && !scalar.EqualWithinRel(res.MeanInSystem, c.l, queueRelTol) {
				t.Errorf("mean in system %.4f, want %.4f", res.MeanInSystem, c.l)
			}
			loss := float64(res.Lost) / float64(res.Arrived)
			if !scalar.EqualWithinAbs(loss, c.lossProb, 0.01) {
				t.Errorf("loss probability %.4f, want %.4f", loss, c.lossProb)
			}
			if res.Entered+res.Lost != res.Arrived || res.Arrived != n {
				t.Errorf("arrived %d, entered %d, lost %d", res.Arrived, res.Entered, res.Lost)
			}
		})
	}
}

// TestProcessorSharingExact checks a hand-computed PS schedule with K = 2:
// jobs (arrival, work) = (0, 2), (0, 1), (0, 1): jobs 0 and 1 share until
// job 1 ends at t = 2 (1 unit each at rate 1/2), job 2 enters at 2; job 0
// has 1 left, job 2 has 1: both end at t = 4.
func TestProcessorSharingExact(t *testing.T) {
	src := &sliceSource{jobs: []JobSpec{{0, 2, 1, 1}, {0, 1, 1, 1}, {0, 1, 1, 1}}}
	m := &Model{SlotCosts: []float64{1, 2}, K: 2, MaxWaiting: -1}
	res, err := m.Run(context.Background(), src, mustPolicy(t, "greedy", 0), RunOptions{Record: true})
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]float64{{0, 4}, {0, 2}, {2, 4}}
	for i, w := range want {
		r := res.Records[i]
		if !scalar.EqualWithinAbs(r.Start, w[0], exactTol) || !scalar.EqualWithinAbs(r.End, w[1], exactTol) {
			t.Errorf("job %d: [%v, %v), want [%v, %v)", i, r.Start, r.End, w[0], w[1])
		}
	}
	// Greedy: job 0 takes slot 0 (cost 1), job 1 slot 1 (cost 2); job 2
	// enters when job 1 frees slot 1 while job 0 still holds slot 0.
	if costs := []float64{res.Records[0].Cost, res.Records[1].Cost, res.Records[2].Cost}; !slices.Equal(costs, []float64{1, 2, 2}) {
		t.Errorf("costs %v, want [1 2 2]", costs)
	}
}

type sliceSource struct {
	jobs []JobSpec
	i    int
}

func (s *sliceSource) Next() (JobSpec, bool) {
	if s.i >= len(s.jobs) {
		return JobSpec{}, false
	}
	s.i++
	return s.jobs[s.i-1], true
}

// smallScenario builds a random small scenario for property tests.
func smallScenario(t testing.TB, rng *rand.Rand) *Scenario {
	t.Helper()
	k := 1 + rng.IntN(3)
	maxR := 1 + rng.IntN(3)
	nSlots := k*maxR + rng.IntN(4)
	costs := make([]float64, nSlots)
	for i := range costs {
		costs[i] = float64(1 + rng.IntN(20))
	}
	maxWait := -1
	if rng.IntN(2) == 0 {
		maxWait = rng.IntN(3)
	}
	data, err := models.NewUniform(1, 2+float64(rng.IntN(50)))
	if err != nil {
		t.Fatal(err)
	}
	red, err := models.NewUniformInt(1, maxR)
	if err != nil {
		t.Fatal(err)
	}
	w, err := models.NewIndependentWorkload(data, red)
	if err != nil {
		t.Fatal(err)
	}
	return &Scenario{
		SlotCosts: costs, SlotsExplicit: true, K: k,
		ArrivalRate: 0.2 + 0.7*rng.Float64(), ServiceRate: 1, MaxWaiting: maxWait,
		Workload: w, Jobs: 500, WarmupJobs: 20, Replications: 2, Seed: rng.Uint64(),
	}
}

func allPolicies() []NamedFactory {
	var out []NamedFactory
	for _, name := range policy.PlacementNames() {
		out = append(out, NamedFactory{Name: name, New: func(seed uint64) (policy.Placement, error) {
			return policy.NewPlacement(name, policy.PlacementConfig{Seed: seed})
		}})
	}
	return out
}

// TestEqualCostsAllPoliciesEqual: with all slot costs equal every policy
// pays X·c per job, so every policy has exactly the same cost.
func TestEqualCostsAllPoliciesEqual(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 10 {
		s := smallScenario(t, rng)
		s.SlotCosts = equalSlots(len(s.SlotCosts), 3.5)
		r, err := s.RunReplication(context.Background(), 0, allPolicies(), false)
		if err != nil {
			t.Fatal(err)
		}
		base := r.Results[placement.NameGreedy].MeanCost
		for name, res := range r.Results {
			if !scalar.EqualWithinAbsOrRel(res.MeanCost, base, exactTol, exactTol) {
				t.Errorf("trial %d: %s costs %v, greedy %v", trial, name, res.MeanCost, base)
			}
		}
		if base <= 0 {
			t.Errorf("trial %d: zero cost", trial)
		}
	}
}

// TestKOneGreedyOptimal: with K = 1 one job is in service at a time and
// every slot is free when a job enters, so greedy costs exactly the
// empty-cluster figure Y·(sum of the R cheapest), the least possible, and
// no policy does better.
func TestKOneGreedyOptimal(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 10 {
		s := smallScenario(t, rng)
		s.K = 1
		r, err := s.RunReplication(context.Background(), 0, allPolicies(), false)
		if err != nil {
			t.Fatal(err)
		}
		g := r.Results[placement.NameGreedy]
		if !scalar.EqualWithinAbsOrRel(g.MeanCost, g.EmptyClusterMean, exactTol, exactTol) {
			t.Errorf("trial %d: greedy %v, empty cluster %v", trial, g.MeanCost, g.EmptyClusterMean)
		}
		for name, res := range r.Results {
			if res.MeanCost < g.MeanCost-exactTol*g.MeanCost {
				t.Errorf("trial %d: %s (%v) beats greedy (%v) with K = 1", trial, name, res.MeanCost, g.MeanCost)
			}
		}
	}
}

// TestEmptyClusterBoundProperty: the empty-cluster figure is ≤ every
// policy's realized cost on the same trace, on random small scenarios.
func TestEmptyClusterBoundProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for trial := range 20 {
		s := smallScenario(t, rng)
		r, err := s.RunReplication(context.Background(), 1, allPolicies(), false)
		if err != nil {
			t.Fatal(err)
		}
		for name, res := range r.Results {
			if res.EmptyClusterMean > res.MeanCost*(1+exactTol) {
				t.Errorf("trial %d: %s: bound %v > cost %v", trial, name, res.EmptyClusterMean, res.MeanCost)
			}
		}
	}
}

// recorder wraps a policy and records what it is shown, checking on each
// request that the free list and the held slots partition the cluster.
type recorder struct {
	policy.Placement
	t      testing.TB
	nSlots int
	k      int
	seen   []string
}

func (r *recorder) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	r.seen = append(r.seen, fmt.Sprintf("%v/%d/%d", req.X, req.R, req.JobsInSystem))
	used := map[int]bool{}
	for _, h := range req.Held {
		for _, s := range h {
			if used[s] {
				r.t.Errorf("slot %d held twice", s)
			}
			used[s] = true
		}
	}
	if len(req.Held) >= r.k {
		r.t.Errorf("%d jobs in service when one enters, K = %d", len(req.Held), r.k)
	}
	for k, f := range req.Free {
		if used[f.Index] {
			r.t.Errorf("slot %d both free and held", f.Index)
		}
		used[f.Index] = true
		if k > 0 && (f.Cost < req.Free[k-1].Cost || (f.Cost == req.Free[k-1].Cost && f.Index < req.Free[k-1].Index)) {
			r.t.Errorf("free list not cheapest first at %d", k)
		}
	}
	if len(used) != r.nSlots {
		r.t.Errorf("free and held cover %d of %d slots", len(used), r.nSlots)
	}
	return r.Placement.Place(req)
}

// TestCommonRandomNumbers: two policies of one replication see identical
// jobs (X, R, N_i) in the same order, and identical service intervals.
func TestCommonRandomNumbers(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 5 {
		s := smallScenario(t, rng)
		var recs []*recorder
		var fs []NamedFactory
		for _, name := range []string{placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon} {
			fs = append(fs, NamedFactory{Name: name, New: func(seed uint64) (policy.Placement, error) {
				p, err := policy.NewPlacement(name, policy.PlacementConfig{Seed: seed})
				rec := &recorder{Placement: p, t: t, nSlots: len(s.SlotCosts), k: s.K}
				recs = append(recs, rec)
				return rec, err
			}})
		}
		r, err := s.RunReplication(context.Background(), 0, fs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs[1:] {
			if !slices.Equal(rec.seen, recs[0].seen) {
				t.Fatalf("trial %d: %s saw a different job stream than %s", trial, rec.Name(), recs[0].Name())
			}
		}
		if len(recs[0].seen) != r.Results[placement.NameRandom].Entered {
			t.Errorf("trial %d: %d decisions for %d entered jobs", trial, len(recs[0].seen), r.Results[placement.NameRandom].Entered)
		}
		// Service intervals do not depend on the policy.
		m := s.Model()
		for _, name := range []string{placement.NameGreedy, placement.NameRandom} {
			res, err := m.Run(context.Background(), s.Source(0), mustPolicy(t, name, 1), RunOptions{Warmup: s.WarmupJobs, Record: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, j := range res.Records {
				o := r.Records[i]
				if j.Arrival != o.Arrival || !sameFloat(j.Start, o.Start) || !sameFloat(j.End, o.End) || j.X != o.X || j.R != o.R {
					t.Fatalf("trial %d, %s: job %d = %+v, first policy's %+v", trial, name, i, j, o)
				}
			}
		}
	}
}

func sameFloat(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// TestDeterminism: the same scenario and seed give identical results; a
// different replication gives different ones.
func TestDeterminism(t *testing.T) {
	s := smallScenario(t, rand.New(rand.NewPCG(13, 14)))
	run := func(rep int) map[string]float64 {
		r, err := s.RunReplication(context.Background(), rep, allPolicies(), false)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for n, res := range r.Results {
			out[n] = res.MeanCost
		}
		return out
	}
	a, b, c := run(0), run(0), run(1)
	for n := range a {
		if a[n] != b[n] {
			t.Errorf("%s: %v then %v with the same seed", n, a[n], b[n])
		}
		if a[n] == c[n] {
			t.Errorf("%s: replications 0 and 1 both %v", n, a[n])
		}
	}
}

type badPolicy struct{ pos []int }

func (badPolicy) Name() string { return "bad" }
func (b badPolicy) Place(*policy.PlacementRequest) (policy.PlacementDecision, error) {
	return policy.PlacementDecision{Positions: b.pos}, nil
}

func TestBadDecisionRejected(t *testing.T) {
	m := &Model{SlotCosts: []float64{1, 2, 3, 4}, K: 2, MaxWaiting: -1}
	for _, pos := range [][]int{{0}, {0, 0}, {1, 0}, {0, 4}, {-1, 0}} {
		src := &sliceSource{jobs: []JobSpec{{0, 1, 1, 2}}}
		_, err := m.Run(context.Background(), src, badPolicy{pos}, RunOptions{})
		if err == nil {
			t.Errorf("positions %v accepted", pos)
		}
	}
}

func TestBadJobRejected(t *testing.T) {
	m := &Model{SlotCosts: []float64{1, 2, 3, 4}, K: 2, MaxWaiting: -1}
	for _, jobs := range [][]JobSpec{
		{{1, 1, 1, 1}, {0, 1, 1, 1}},
		{{0, -1, 1, 1}},
		{{0, 1, math.NaN(), 1}},
		{{0, 1, 1, 3}}, // K·R = 6 > 4 slots
		{{0, 1, 1, 0}},
	} {
		_, err := m.Run(context.Background(), &sliceSource{jobs: jobs}, mustPolicy(t, "greedy", 0), RunOptions{})
		if err == nil {
			t.Errorf("jobs %v accepted", jobs)
		}
	}
}

func TestRunCancelled(t *testing.T) {
	s := smallScenario(t, rand.New(rand.NewPCG(1, 1)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Model().Run(ctx, s.Source(0), mustPolicy(t, "greedy", 0), RunOptions{}); err == nil {
		t.Error("cancelled run returned no error")
	}
}

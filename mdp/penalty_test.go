package mdp

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/placement" // greedy, random, receding-horizon, state-threshold
	"github.com/optd/optd/sim"
	"github.com/optd/optd/sim/simtest"
)

// genPlacementScenario draws a small placement scenario whose MDP is
// solvable (simtest.PlacementScenario).
var genPlacementScenario = simtest.PlacementScenario

// recorder wraps a placement policy and records the class counts of each
// decision, in the order of entry into service.
type recorder struct {
	policy.Placement
	cls   *classes
	alloc [][]int
}

func (r *recorder) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	d, err := r.Placement.Place(req)
	if err == nil {
		a := make([]int, r.cls.num())
		for _, p := range d.Positions {
			a[r.cls.of[req.Free[p].Cost]]++
		}
		r.alloc = append(r.alloc, a)
	}
	return d, err
}

// policyRun is one replication under one policy: its records, the total
// cost of the counted jobs and the total realized penalty Z = Σ a·z of the
// counted jobs under that policy's own placements.
type policyRun struct {
	cost, z     float64
	counted     int
	lpPenalized float64
}

func runWithPenalty(t testing.TB, ctx context.Context, s *sim.Scenario, resample bool, pen *Penalty, rep int, p policy.Placement) policyRun {
	t.Helper()
	rec := &recorder{Placement: p, cls: pen.cls}
	r, err := replicate(ctx, s, rep, []sim.NamedFactory{{Name: "p", New: func(uint64) (policy.Placement, error) { return rec, nil }}}, resample)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Results["p"]
	// Decisions are in order of entry; map them to the records.
	var entered []int
	for i, j := range r.Records {
		if !j.Lost {
			entered = append(entered, i)
		}
	}
	slices.SortStableFunc(entered, func(a, b int) int { return cmp.Compare(r.Records[a].Start, r.Records[b].Start) })
	if len(entered) != len(rec.alloc) {
		t.Fatalf("%d entries, %d decisions", len(entered), len(rec.alloc))
	}
	allocOf := make(map[int][]int, len(entered))
	for k, i := range entered {
		allocOf[i] = rec.alloc[k]
	}
	tr := pen.basis.traceOf(r.Records)
	adj := pen.adjust(tr)
	C := pen.cls.num()
	out := policyRun{cost: res.TotalCost, counted: res.Counted}
	k := 0
	for i, j := range r.Records {
		if !j.Counted {
			continue
		}
		a := allocOf[i]
		zi := 0.0
		for c, x := range a {
			zi += float64(x) * adj[k*C+c]
		}
		out.z += zi
		k++
	}
	if out.lpPenalized, err = pen.BoundOfRecords(ctx, r.Records); err != nil {
		t.Fatal(err)
	}
	return out
}

// cheapestRecords simulates replication rep of s with every job on the
// cheapest free slots.
func cheapestRecords(t testing.TB, s *sim.Scenario, rep int) *sim.Replication {
	t.Helper()
	r, err := s.RunReplication(context.Background(), rep, []sim.NamedFactory{{Name: "c", New: func(uint64) (policy.Placement, error) { return cheapestFree{}, nil }}}, true)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// cheapestRun simulates replication rep of s with every job on the
// cheapest free slots and returns the run and the hindsight LP of its
// counted jobs.
func cheapestRun(t testing.TB, s *sim.Scenario, rep int) (*sim.Replication, float64) {
	t.Helper()
	ctx := context.Background()
	r := cheapestRecords(t, s, rep)
	var counted []sim.JobRecord
	for _, j := range r.Records {
		if j.Counted {
			counted = append(counted, j)
		}
	}
	h, err := HindsightBoundOfRecords(ctx, counted, s.SlotCosts, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r, h
}

// testPenalty fits a penalty cheaply (few short training runs): validity
// holds for every θ, so the tests do not need a good fit.
func testPenalty(t testing.TB, s *sim.Scenario, fit PenaltyFit) *Penalty {
	t.Helper()
	pen, err := FitPenalty(context.Background(), s, fit)
	if err != nil {
		t.Fatal(err)
	}
	return pen
}

// randomTheta replaces θ by random coefficients of the fitted one's scale
// (or of the cost scale): the penalty must have mean zero for any θ.
func randomTheta(pen *Penalty, rng *rand.Rand, scale float64) {
	for k := range pen.theta {
		pen.theta[k] = scale * rng.NormFloat64()
	}
}

// onlyFeatures sets θ to zero on every feature outside [lo, hi).
func onlyFeatures(pen *Penalty, lo, hi int) {
	for k := range pen.theta {
		if f := k % pen.basis.nFeat; f < lo || f >= hi {
			pen.theta[k] = 0
		}
	}
}

// TestPenaltyMeanZeroUnderPolicies: under several non-anticipative
// policies, the realized penalty per job Z/jobs has mean zero (within its
// 99.9% interval over replications), for random θ of two scales;
// and trace by trace the penalized LP is at most the policy's cost plus
// its own realized penalty (P2).
//
// Under the race detector it runs its light (-short) form: the Lagrangian's
// packing loop, most of its time, runs some fifteen times slower there
// (7.5 minutes against 31 s), and the race detector finds nothing more in
// 24 replications than in 12. The full form runs without it in
// scripts/test.sh, so the suite keeps the full statistical power.
func TestPenaltyMeanZeroUnderPolicies(t *testing.T) {
	light := testing.Short() || raceEnabled
	reps := 24
	if light {
		reps = 12
	}
	names := []string{"greedy", "random", "receding-horizon", "state-threshold:base=2;per-job=1.5"}
	for _, c := range []struct {
		seed    uint64
		scale   float64
		grouped bool
	}{{3, 5, false}, {8, 20, false}, {8, 20, true}} {
		if light && c.grouped {
			continue // grouped: TestPenaltyBelowOptimum, and the cases at scale below
		}
		s, desc := genPlacementScenario(t, c.seed, 600, reps)
		// Random θ of two scales: FitPenalty may keep θ = 0 (a zero
		// penalty), and validity must not depend on the fit.
		pen := testPenalty(t, s, PenaltyFit{Steps: 20, Jobs: 200, grouped: c.grouped})
		randomTheta(pen, rand.New(rand.NewPCG(c.seed, 1)), c.scale)
		sol := solveScenario(t, s)
		checkPenaltyUnderPolicies(t, fmt.Sprintf("seed %d (grouped %v)", c.seed, c.grouped), desc, s, false, pen, append(names, OptimalPolicyName), sol.Policy)
	}
	// At scale: the Fig. 9 setting beyond the paper (K = 100, 1000
	// distinct costs: grouped classes, compact features, the Lagrangian
	// as the inner bound), short replications.
	s, err := sim.LoadScenario("../search/testdata/fig9-rho0.9.json")
	if err != nil {
		t.Fatal(err)
	}
	jobs := 400
	if light {
		jobs, reps = 150, 8
	}
	s.Jobs, s.WarmupJobs, s.Replications = jobs, 50, reps
	// With the optional features too (the big-others terms, the finer
	// class grid), so that they are checked under these policies.
	pen := testPenalty(t, s, PenaltyFit{Steps: 5, Jobs: 300, variant: penaltyVariant{bigOthers: true, classesPerDoubling: 3}})
	if pen.grp == nil {
		t.Fatal("1000 classes are not grouped")
	}
	if pen.basis.bigFeatures() == 0 {
		t.Fatal("no big-others terms")
	}
	// Every step of the Lagrangian is a bound: a few keep (P2) tested
	// and the test light.
	pen.Lagrange.Iterations = 40
	randomTheta(pen, rand.New(rand.NewPCG(5, 1)), 0.05)
	checkPenaltyUnderPolicies(t, "fig9 rho 0.9", "fig9-rho0.9.json", s, false, pen, names, nil)
	// The departure terms of "Who leaves" (Y-weighted and of the top two
	// bins of Y) on their own: θ random on their coefficients and zero on
	// the others' (checked above), whose noise would hide theirs.
	pen = testPenalty(t, s, PenaltyFit{Steps: 5, Jobs: 300, variant: penaltyVariant{yDepartures: true, binDepartures: 2}})
	if len(pen.basis.depWeights()) != 4 {
		t.Fatalf("departure families %v, want R, Y·R and two bins of Y", pen.basis.depWeights())
	}
	pen.Lagrange.Iterations = 40
	randomTheta(pen, rand.New(rand.NewPCG(8, 1)), 0.05)
	b := pen.basis
	onlyFeatures(pen, b.occ+2*b.nrGrp, b.occ+b.occupancyFeatures())
	checkPenaltyUnderPolicies(t, "fig9 rho 0.9 (who leaves)", "fig9-rho0.9.json", s, false, pen, names, nil)
	// A trace (SWIM FB-2010's first jobs): only the works are random.
	s = swimScenario(t, jobs, reps)
	pen = testPenalty(t, s, PenaltyFit{Steps: 5, Jobs: 300})
	pen.Lagrange.Iterations = 40
	randomTheta(pen, rand.New(rand.NewPCG(6, 1)), 0.5)
	checkPenaltyUnderPolicies(t, "swim-fb2010", "swim-fb2010.json", s, false, pen, names, nil)
	// Its arrivals with the marks drawn i.i.d. from its empirical law
	// (ResampledMarks): the mark terms apply, under that model only.
	pen = testPenalty(t, s, PenaltyFit{Steps: 5, Jobs: 300, ResampledMarks: true})
	if len(pen.basis.marks) == 0 {
		t.Fatal("resampled marks: no mark terms")
	}
	pen.Lagrange.Iterations = 40
	randomTheta(pen, rand.New(rand.NewPCG(7, 1)), 0.01) // Y·R in MiB: large features
	checkPenaltyUnderPolicies(t, "swim-fb2010 resampled", "swim-fb2010.json (resampled marks)", s, true, pen, names, nil)
}

// swimScenario is search/testdata/swim-fb2010.json cut to its first jobs
// (a trace replays all it has: its length is decoded, not set) with reps
// replications (other exponential works each) and 20 warm-up jobs.
func swimScenario(t *testing.T, jobs, reps int) *sim.Scenario {
	t.Helper()
	raw, err := os.ReadFile("../search/testdata/swim-fb2010.json")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	v["jobs"], v["replications"], v["warmup_jobs"] = jobs, reps, 20
	raw, _ = json.Marshal(v)
	s, err := sim.DecodeScenario(raw, "../search/testdata")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkPenaltyUnderPolicies checks, under each named policy (and
// OptimalPolicyName: opt), that the realized penalty per job has mean zero
// within its 99.9% interval over s's replications and that, trace by
// trace, the penalized bound is at most the policy's cost plus its own
// realized penalty (P2).
func checkPenaltyUnderPolicies(t *testing.T, label, desc string, s *sim.Scenario, resample bool, pen *Penalty, names []string, opt policy.Placement) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		zs := make([]float64, s.Replications)
		for rep := range s.Replications {
			var p policy.Placement
			if name == OptimalPolicyName {
				p = opt
			} else {
				base, params, err := policy.ParsePlacementSpec(name)
				if err != nil {
					t.Fatal(err)
				}
				if p, err = policy.NewPlacement(base, policy.PlacementConfig{Seed: uint64(rep), Params: params}); err != nil {
					t.Fatal(err)
				}
			}
			run := runWithPenalty(t, ctx, s, resample, pen, rep, p)
			zs[rep] = run.z / float64(run.counted)
			if lhs, rhs := run.lpPenalized, run.cost+run.z; lhs > rhs+1e-7*(1+math.Abs(rhs)) {
				t.Errorf("%s, %s, rep %d: penalized LP %.9g > cost %.9g + own penalty %.9g", desc, name, rep, lhs, run.cost, run.z)
			}
		}
		mean, half := sim.MeanCI95(zs)
		// 99.9% instead of 95%: a dozen checks must not fail by chance.
		half *= 3.3 / 1.96
		if math.Abs(mean) > half {
			t.Errorf("%s, %s: mean penalty per job %.4g, outside ±%.4g", label, name, mean, half)
		}
		t.Logf("%s %-36s mean penalty/job %+.4f ± %.4f", label, name, mean, half)
	}
}

// TestPenaltyZeroIsHindsight: θ = 0 gives the hindsight LP exactly.
func TestPenaltyZeroIsHindsight(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(4) {
		s, desc := genPlacementScenario(t, 100+seed, 300, 1)
		pen := testPenalty(t, s, PenaltyFit{Steps: 1, Jobs: 200})
		clear(pen.theta)
		r, want := cheapestRun(t, s, 0)
		got, err := pen.BoundOfRecords(ctx, r.Records)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-7*(1+math.Abs(want)) {
			t.Errorf("%s: zero penalty gives %.10g, hindsight LP %.10g", desc, got, want)
		}
	}
}

// solveScenario solves the MDP of scenario s.
func solveScenario(t testing.TB, s *sim.Scenario) *PlacementSolution {
	t.Helper()
	m, err := ModelOf(s)
	if err != nil {
		t.Fatal(err)
	}
	sol, err := SolvePlacement(context.Background(), m, SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sol
}

// penaltyRatio returns the penalized bound's mean per job over reps and
// its CI half-width, the hindsight LP's mean, and the MDP optimum.
func penaltyRatio(t testing.TB, s *sim.Scenario, fit PenaltyFit) (mean, half, hind, opt float64) {
	t.Helper()
	ctx := context.Background()
	sol := solveScenario(t, s)
	pen, err := FitPenalty(ctx, s, fit)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([]float64, s.Replications)
	hs := 0.0
	for rep := range s.Replications {
		r, h := cheapestRun(t, s, rep)
		v, err := pen.BoundOfRecords(ctx, r.Records)
		if err != nil {
			t.Fatal(err)
		}
		n := float64(r.Results["c"].Counted)
		xs[rep] = v / n
		hs += h / n / float64(s.Replications)
	}
	mean, half = sim.MeanCI95(xs)
	return mean, half, hs, sol.Optimal
}

// TestPenaltyBelowOptimum: on generated MDP-solvable scenarios (loads,
// slot costs with ties, dependent (X, R), waiting rooms), the penalized
// bound is not significantly above the exact optimum.
func TestPenaltyBelowOptimum(t *testing.T) {
	n, steps, jobs, reps := 13, 30, 1500, 6
	if testing.Short() {
		n, reps = 5, 4
	}
	for seed := range uint64(n) {
		s, desc := genPlacementScenario(t, 1000+seed, jobs, reps)
		// Per class, and grouped with the compact features (the
		// at-scale penalty, forced on a cluster the MDP solves), θ fitted
		// on the coarse cluster and, on the first five seeds, on the
		// exact costs (fitExact) and with the departure terms of "Who
		// leaves" (Y-weighted and of the top two bins of Y), and with
		// warmed-up training runs (PenaltyFit.WarmupJobs).
		for _, m := range []struct {
			grouped, exact, leaves, warm bool
		}{{false, false, false, false}, {true, false, false, false}, {true, true, false, false}, {true, false, true, false}, {true, false, false, true}} {
			if (m.exact || m.leaves || m.warm) && seed >= 5 {
				continue
			}
			v := penaltyVariant{exactFit: m.exact}
			if m.leaves {
				v.yDepartures, v.binDepartures = true, 2
			}
			fit := PenaltyFit{Steps: steps, Jobs: 200, grouped: m.grouped, variant: v}
			if m.warm {
				fit.WarmupJobs = 300
			}
			mean, half, hind, opt := penaltyRatio(t, s, fit)
			t.Logf("seed %d (grouped %v, exact fit %v, who leaves %v, warm-up %v): optimum %.4f, penalized %.4f ± %.4f (%.1f%%), hindsight %.4f (%.1f%%)", 1000+seed, m.grouped, m.exact, m.leaves, m.warm, opt, mean, half, 100*mean/opt, hind, 100*hind/opt)
			if mean-3.3/1.96*half > opt*(1+1e-9) {
				t.Errorf("%s (grouped %v, exact fit %v, who leaves %v, warm-up %v): penalized bound %.6g ± %.3g above the optimum %.6g", desc, m.grouped, m.exact, m.leaves, m.warm, mean, half, opt)
			}
		}
	}
}

// TestPenaltyReport prints bound/optimum ratios on the three scenarios of
// the issue and penaltyReportSeeds generated ones: the penalized LP with the
// default fit, the chain's relaxation with nothing solved (ValueBound with
// α = 0) and the value-penalty bound (ValueBound), with the time of the
// MDP's solve beside theirs (long: set OPTD_PENALTY_REPORT=1;
// `make penalty-report`).
func TestPenaltyReport(t *testing.T) {
	if os.Getenv("OPTD_PENALTY_REPORT") == "" {
		t.Skip("set OPTD_PENALTY_REPORT=1")
	}
	var scens []*sim.Scenario
	var names []string
	for _, p := range []string{"../examples/placement-scenario.json", "../search/testdata/mdp-small.json", "../search/testdata/mdp-8slots.json"} {
		s, err := sim.LoadScenario(p)
		if err != nil {
			t.Fatal(err)
		}
		s.Replications = min(s.Replications, 5)
		scens, names = append(scens, s), append(names, p)
	}
	// OPTD_PENALTY_SEED0: the generated scenarios' first seed (default
	// 1000; another block is scenarios no choice of the bounds was made on).
	seed0 := uint64(envInt("OPTD_PENALTY_SEED0", 1000))
	for seed := range uint64(penaltyReportSeeds) {
		s, _ := genPlacementScenario(t, seed0+seed, 10000, 5)
		scens, names = append(scens, s), append(names, fmt.Sprintf("generated seed %d", seed0+seed))
	}
	fmt.Printf("| scenario | optimum (MDP solve) | hindsight LP | penalized LP | penalized/optimum | chain relaxation, nothing solved (time) | chain/optimum | value penalty, greedy's bias (time) | value/optimum | best/optimum |\n|---|---|---|---|---|---|---|---|---|---|\n")
	// OPTD_PENALTY_ONLY: comma-separated substrings of the names to run;
	// OPTD_PENALTY_SKIP_LP=1 leaves the penalized LP out (its fit takes
	// most of the time).
	only := strings.Split(os.Getenv("OPTD_PENALTY_ONLY"), ",")
	skipLP := os.Getenv("OPTD_PENALTY_SKIP_LP") != ""
	ctx := context.Background()
	for k, s := range scens {
		if !slices.ContainsFunc(only, func(o string) bool { return strings.Contains(names[k], o) }) {
			continue
		}
		t0 := time.Now()
		sol := solveScenario(t, s)
		solveTime := time.Since(t0)
		m, err := ModelOf(s)
		if err != nil {
			t.Fatal(err)
		}
		t0 = time.Now()
		chain, err := ValueBound(ctx, m, ValueBoundOptions{Seed: s.Seed, Alphas: []float64{0}})
		if err != nil {
			t.Fatal(err)
		}
		chainTime := time.Since(t0)
		t0 = time.Now()
		vb, err := ValueBound(ctx, m, ValueBoundOptions{Seed: s.Seed})
		if err != nil {
			t.Fatal(err)
		}
		valueTime := time.Since(t0)
		opt := sol.Optimal
		lpCells, best := "- | - | -", max(vb.Mean, chain.Mean)
		if !skipLP {
			mean, half, hind, _ := penaltyRatio(t, s, reportFit())
			lpCells = fmt.Sprintf("%.3f (%.1f%%) | %.3f ± %.3f | %.1f%%", hind, 100*hind/opt, mean, half, 100*mean/opt)
			best = max(best, mean)
		}
		fmt.Printf("| %s | %.3f (%v) | %s | %.3f ± %.3f (%v) | %.1f%% | %.3f ± %.3f (α = %g, %v) | %.1f%% | %.1f%% |\n", names[k], opt, solveTime.Round(time.Microsecond),
			lpCells, chain.Mean, chain.HalfWidth, chainTime.Round(time.Millisecond), 100*chain.Mean/opt,
			vb.Mean, vb.HalfWidth, vb.Alpha, valueTime.Round(time.Millisecond), 100*vb.Mean/opt, 100*best/opt)
	}
}

// TestPenaltyPolicy: the one-step lookahead on the penalty's value function
// is a valid stateless placement policy; its exact long-run cost on the MDP
// is at least the optimum (a check of EvaluatePolicy and of the policy's
// decisions) and, on the mdp-small scenario, below greedy's.
func TestPenaltyPolicy(t *testing.T) {
	ctx := context.Background()
	s, err := sim.LoadScenario("../search/testdata/mdp-small.json")
	if err != nil {
		t.Fatal(err)
	}
	pen, err := FitPenalty(ctx, s, PenaltyFit{Steps: 80, Jobs: 300})
	if err != nil {
		t.Fatal(err)
	}
	sol := solveScenario(t, s)
	m, _ := ModelOf(s)
	adp, err := EvaluatePolicy(ctx, m, pen.Policy(), SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	greedy := sol.PolicyCosts["greedy"]
	t.Logf("optimum %.3f, %s %.3f, greedy %.3f", sol.Optimal, PenaltyPolicyName, adp, greedy)
	if adp < sol.Optimal*(1-1e-9) {
		t.Errorf("%s costs %.9g, below the optimum %.9g", PenaltyPolicyName, adp, sol.Optimal)
	}
	if !(adp < greedy) {
		t.Errorf("%s costs %.6g, not below greedy's %.6g", PenaltyPolicyName, adp, greedy)
	}
	if _, err := pen.Policy().Place(&policy.PlacementRequest{R: 3, X: 1, Free: []policy.Slot{{Index: 0, Cost: 1}}}); err == nil {
		t.Error("a request with fewer free slots than R was accepted")
	}
}

// penaltyReportSeeds is the number of generated scenarios of
// TestPenaltyReport (seeds 1000, 1001, …, or from OPTD_PENALTY_SEED0).
const penaltyReportSeeds = 20

// reportFit is TestPenaltyReport's fit: the defaults, or
// OPTD_PENALTY_STEPS steps.
func reportFit() PenaltyFit {
	n, _ := strconv.Atoi(os.Getenv("OPTD_PENALTY_STEPS"))
	return PenaltyFit{Steps: max(n, 0)}
}

// TestPenaltyFeaturesMeanZero: every feature f_{i,k} of the penalty (the
// queue terms on (n, w), the rich queue terms on the other jobs' groups,
// the marks and the marks by the state before each later entry; compact,
// the occupancy terms, the big-others terms and the departure terms of
// "Who leaves", Y-weighted and of every bin of Y) has mean
// zero over the counted jobs, each within a Bonferroni-corrected interval
// over replications: a check of each generator row and compensator, more
// sensitive than the penalty's mean for one θ.
func TestPenaltyFeaturesMeanZero(t *testing.T) {
	reps, jobs := 40, 800
	if testing.Short() {
		reps, jobs = 20, 400
	}
	for _, path := range []string{"../search/testdata/mdp-small.json", "../examples/placement-scenario.json"} {
		s, err := sim.LoadScenario(path)
		if err != nil {
			t.Fatal(err)
		}
		s.Jobs, s.WarmupJobs, s.Replications = jobs, 20, reps
		b, err := newPenaltyBasis(s, false)
		if err != nil {
			t.Fatal(err)
		}
		if b.rich == nil {
			t.Fatalf("%s: no rich buckets", path)
		}
		checkFeaturesMeanZero(t, path, s, b, false)
	}
	// The compact features of a large cluster (K = 100, 1000 classes) at
	// both loads of the Fig. 9 setting beyond the paper.
	for _, rho := range []string{"0.6", "0.9"} {
		path := "../search/testdata/fig9-rho" + rho + ".json"
		s, err := sim.LoadScenario(path)
		if err != nil {
			t.Fatal(err)
		}
		s.Jobs, s.WarmupJobs, s.Replications = jobs, 20, reps
		b, err := newPenaltyBasis(s, true)
		if err != nil {
			t.Fatal(err)
		}
		checkFeaturesMeanZero(t, path+" (compact)", s, b, false)
	}
	// A trace (SWIM FB-2010's first jobs, exponential works): the queue
	// terms with the trace's arrivals as predictable jumps.
	s := swimScenario(t, jobs, reps)
	b, err := newPenaltyBasis(s, true)
	if err != nil {
		t.Fatal(err)
	}
	checkFeaturesMeanZero(t, "swim-fb2010 (trace)", s, b, false)
	// The same trace's arrivals with its marks drawn i.i.d. from its
	// empirical law (ResampledMarks): the mark terms too.
	if b, err = newPenaltyBasisOf(s, basisOptions{compact: true, resampled: true, occupancy: true}); err != nil {
		t.Fatal(err)
	}
	if len(b.marks) == 0 {
		t.Fatal("resampled marks: no mark terms")
	}
	checkFeaturesMeanZero(t, "swim-fb2010 (resampled marks)", s, b, true)
}

// checkFeaturesMeanZero checks that every feature of basis b has mean zero
// over s's replications (Bonferroni over the features).
func checkFeaturesMeanZero(t *testing.T, name string, s *sim.Scenario, b *penaltyBasis, resample bool) {
	t.Helper()
	F := b.nFeat
	means := make([][]float64, F)
	cheapest := []sim.NamedFactory{{Name: "c", New: func(uint64) (policy.Placement, error) { return cheapestFree{}, nil }}}
	for rep := range s.Replications {
		r, err := replicate(context.Background(), s, rep, cheapest, resample)
		if err != nil {
			t.Fatal(err)
		}
		tr := b.traceOf(r.Records)
		n := float64(len(tr.jobs))
		sum := make([]float64, F)
		for i := range tr.jobs {
			for k, v := range tr.f[i*F : (i+1)*F] {
				sum[k] += v / n
			}
		}
		for k := range F {
			means[k] = append(means[k], sum[k])
		}
	}
	// Two-sided 1e-3 over all features together: z for 5e-4/F.
	z := normalQuantile(1 - 5e-4/float64(F))
	tested := 0
	for k, xs := range means {
		m, half := sim.MeanCI95(xs)
		if half == 0 {
			continue
		}
		tested++
		if se := half / 1.96; math.Abs(m) > z*se*1.1 { // 1.1: t vs normal at 20+ replications
			t.Errorf("%s: feature %d (of %d) has mean %.4g, %.1f standard errors from 0", name, k, F, m, math.Abs(m)/se)
		}
	}
	t.Logf("%s: %d features tested (z = %.2f)", name, tested, z)
}

// normalQuantile is the standard normal quantile (bisection on Erfc).
func normalQuantile(p float64) float64 {
	lo, hi := -10.0, 10.0
	for range 100 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

package mdp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// costTol compares costs per job computed by two methods.
const costTol = 1e-8

func jointWorkload(t testing.TB, pts ...models.JointPoint) *models.Workload {
	t.Helper()
	w, err := models.NewJointWorkload(pts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func uniformWorkload(t testing.TB, xmin, xmax float64, rmin, rmax int) *models.Workload {
	t.Helper()
	x, err := models.NewUniform(xmin, xmax)
	if err != nil {
		t.Fatal(err)
	}
	r, err := models.NewUniformInt(rmin, rmax)
	if err != nil {
		t.Fatal(err)
	}
	w, err := models.NewIndependentWorkload(x, r)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// smallModel has 4 slots of 3 costs, K = 2, R ∈ {1, 2}, Y ∈ {1, 4, 10}.
func smallModel(t testing.TB) PlacementModel {
	return PlacementModel{
		SlotCosts: []float64{1, 3, 3, 7},
		K:         2, Lambda: 0.8, Mu: 1, MaxWaiting: 2,
		Workload: jointWorkload(t,
			models.JointPoint{Data: 1, Reduces: 1, Prob: 0.3},
			models.JointPoint{Data: 10, Reduces: 1, Prob: 0.3},
			models.JointPoint{Data: 8, Reduces: 2, Prob: 0.4}),
	}
}

// mediumModel has 6 slots of 5 costs, K = 3, R ∈ {1, 2}.
func mediumModel(t testing.TB) PlacementModel {
	return PlacementModel{
		SlotCosts: []float64{1, 2, 4, 4, 8, 16},
		K:         3, Lambda: 1.5, Mu: 1, MaxWaiting: 1,
		Workload: jointWorkload(t,
			models.JointPoint{Data: 1, Reduces: 1, Prob: 0.25},
			models.JointPoint{Data: 20, Reduces: 1, Prob: 0.25},
			models.JointPoint{Data: 2, Reduces: 2, Prob: 0.25},
			models.JointPoint{Data: 30, Reduces: 2, Prob: 0.25}),
	}
}

func solve(t testing.TB, m PlacementModel, opts SolveOptions) *PlacementSolution {
	t.Helper()
	sol, err := SolvePlacement(context.Background(), m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sol
}

func TestPlacementMethodsAgree(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model PlacementModel
	}{{"small", smallModel(t)}, {"medium", mediumModel(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			rvi := solve(t, tc.model, SolveOptions{Tolerance: 1e-12})
			lps := solve(t, tc.model, SolveOptions{Method: MethodLP})
			pi := solve(t, tc.model, SolveOptions{Method: MethodPolicyIteration})
			t.Logf("states %d: optimal %.12g (rvi) %.12g (lp) %.12g (pi); greedy %.12g random %.12g",
				rvi.States, rvi.Optimal, lps.Optimal, pi.Optimal, rvi.PolicyCosts["greedy"], rvi.PolicyCosts["random"])
			if !rvi.Exact || rvi.Lower != rvi.Upper || rvi.Optimal != rvi.Upper {
				t.Errorf("discrete workload: exact %v, bracket [%g, %g], optimal %g", rvi.Exact, rvi.Lower, rvi.Upper, rvi.Optimal)
			}
			for name, v := range map[string]float64{"lp": lps.Optimal, "policy iteration": pi.Optimal} {
				if !scalar.EqualWithinAbsOrRel(rvi.Optimal, v, costTol, costTol) {
					t.Errorf("RVI optimum %.12g, %s %.12g", rvi.Optimal, name, v)
				}
			}
			for name, v := range rvi.PolicyCosts {
				if rvi.Optimal > v*(1+costTol) {
					t.Errorf("optimum %.12g exceeds %s %.12g", rvi.Optimal, name, v)
				}
			}
		})
	}
}

// positionsPolicy is a test policy choosing positions from (y, R, free).
type positionsPolicy struct {
	name string
	pick func(y float64, r, free int) int // first position of a contiguous block
}

func (p positionsPolicy) Name() string { return p.name }

func (p positionsPolicy) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	first := p.pick(req.X/float64(req.R), req.R, len(req.Free))
	first = min(max(first, 0), len(req.Free)-req.R)
	pos := make([]int, req.R)
	for i := range pos {
		pos[i] = first + i
	}
	return policy.PlacementDecision{Positions: pos, Threshold: math.NaN(), Reason: p.name}, nil
}

var (
	greedyTest    = positionsPolicy{"greedy-test", func(float64, int, int) int { return 0 }}
	expensiveTest = positionsPolicy{"most-expensive", func(_ float64, r, free int) int { return free - r }}
)

// thresholdTest leaves the cheapest R slots free for later jobs when y < q.
func thresholdTest(q float64) positionsPolicy {
	return positionsPolicy{fmt.Sprintf("threshold-%g", q), func(y float64, r, free int) int {
		if y < q {
			return r
		}
		return 0
	}}
}

func evaluate(t testing.TB, m PlacementModel, p policy.Placement) float64 {
	t.Helper()
	v, err := EvaluatePolicy(context.Background(), m, p, SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOptimumBelowEveryPolicy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model PlacementModel
	}{{"small", smallModel(t)}, {"medium", mediumModel(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			sol := solve(t, tc.model, SolveOptions{})
			if g := evaluate(t, tc.model, greedyTest); !scalar.EqualWithinAbsOrRel(g, sol.PolicyCosts["greedy"], costTol, costTol) {
				t.Errorf("greedy through the Placement interface %.12g, built in %.12g", g, sol.PolicyCosts["greedy"])
			}
			// The optimal Policy, asked on every state, attains the optimum.
			if v := evaluate(t, tc.model, sol.Policy); !scalar.EqualWithinAbsOrRel(v, sol.Optimal, costTol, costTol) {
				t.Errorf("%s evaluated %.12g, optimum %.12g", sol.Policy.Name(), v, sol.Optimal)
			}
			if sol.Policy.Name() != OptimalPolicyName {
				t.Errorf("policy name %q", sol.Policy.Name())
			}
			costs := map[string]float64{}
			for _, p := range []policy.Placement{expensiveTest, thresholdTest(2), thresholdTest(5), thresholdTest(12)} {
				costs[p.Name()] = evaluate(t, tc.model, p)
			}
			for k, v := range sol.PolicyCosts {
				costs[k] = v
			}
			for name, v := range costs {
				if sol.Optimal > v*(1+costTol) {
					t.Errorf("optimum %.12g exceeds %s %.12g", sol.Optimal, name, v)
				}
			}
			if !(sol.Optimal < sol.PolicyCosts["greedy"]*(1-1e-3)) {
				t.Errorf("optimum %.12g should beat greedy %.12g here", sol.Optimal, sol.PolicyCosts["greedy"])
			}
			t.Logf("optimal %.6g; %v", sol.Optimal, costs)
		})
	}
}

// Uniform random placement keeps the occupied set exchangeable, so every job's
// slots are a uniform sample of all slots: cost per job E[X]·mean(H).
func TestRandomPolicyCostsMeanSlotCost(t *testing.T) {
	m := mediumModel(t)
	mean := 0.0
	for _, c := range m.SlotCosts {
		mean += c / float64(len(m.SlotCosts))
	}
	want := m.Workload.MeanData() * mean
	sol := solve(t, m, SolveOptions{})
	if got := sol.PolicyCosts["random"]; !scalar.EqualWithinAbsOrRel(got, want, costTol, costTol) {
		t.Errorf("random %.12g, want E[X]·mean H = %.12g", got, want)
	}
	if got := evaluate(t, m, positionsPolicy{name: RandomPolicyName}); !scalar.EqualWithinAbsOrRel(got, want, costTol, costTol) {
		t.Errorf("EvaluatePolicy(random) %.12g, want %.12g", got, want)
	}
}

// The fraction of decision steps e/(1+e) from the M/M/1/(K+W) queue equals the
// stationary mass of the decision states.
func TestEntryRateMatchesStationary(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model PlacementModel
	}{{"small", smallModel(t)}, {"medium", mediumModel(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model
			cls, err := m.validate()
			if err != nil {
				t.Fatal(err)
			}
			pm, err := buildPlacement(context.Background(), m, cls, discretize(m.Workload, 16).upper, 1e6)
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range []Policy{pm.greedyPolicy(), pm.randomPolicy()} {
				ev, err := Evaluate(context.Background(), pm.m, pol, Options{})
				if err != nil {
					t.Fatal(err)
				}
				frac := 0.0
				for s, x := range ev.Stationary {
					if pm.atomOf[s] >= 0 {
						frac += x
					}
				}
				if !scalar.EqualWithinAbsOrRel(frac, pm.decisionFraction(), exactTol, exactTol) {
					t.Errorf("stationary decision mass %.12g, e/(1+e) = %.12g", frac, pm.decisionFraction())
				}
			}
		})
	}
}

func TestEqualCostsEveryPolicySame(t *testing.T) {
	m := mediumModel(t)
	m.SlotCosts = []float64{5, 5, 5, 5, 5, 5}
	want := m.Workload.MeanData() * 5
	sol := solve(t, m, SolveOptions{})
	if sol.States == 0 || !scalar.EqualWithinAbsOrRel(sol.Optimal, want, costTol, costTol) {
		t.Errorf("optimum %.12g, want E[X]·5 = %.12g", sol.Optimal, want)
	}
	costs := map[string]float64{"threshold": evaluate(t, m, thresholdTest(5)), "most-expensive": evaluate(t, m, expensiveTest)}
	for k, v := range sol.PolicyCosts {
		costs[k] = v
	}
	for name, v := range costs {
		if !scalar.EqualWithinAbsOrRel(v, want, costTol, costTol) {
			t.Errorf("%s costs %.12g, want %.12g", name, v, want)
		}
	}
}

// With K = 1 a job never shares the cluster, so the cheapest slots are optimal.
func TestK1GreedyOptimal(t *testing.T) {
	m := mediumModel(t)
	m.K, m.MaxWaiting, m.Lambda = 1, 3, 3
	sol := solve(t, m, SolveOptions{})
	if g := sol.PolicyCosts["greedy"]; !scalar.EqualWithinAbsOrRel(sol.Optimal, g, costTol, costTol) {
		t.Errorf("K = 1: optimum %.12g, greedy %.12g", sol.Optimal, g)
	}
	if want := EmptyClusterBound(m.Workload, m.SlotCosts); !scalar.EqualWithinAbsOrRel(sol.Optimal, want, costTol, costTol) {
		t.Errorf("K = 1: optimum %.12g, empty-cluster cost %.12g", sol.Optimal, want)
	}
}

// As λ → 0 a job almost surely finds the cluster empty and leaves before the
// next arrives: the optimum tends to greedy (and to the empty-cluster bound).
func TestSmallLambdaGreedyOptimal(t *testing.T) {
	m := smallModel(t)
	prevGap := math.Inf(1)
	for _, lam := range []float64{1, 0.1, 0.01, 1e-4} {
		m.Lambda = lam
		sol := solve(t, m, SolveOptions{Method: MethodPolicyIteration})
		g := sol.PolicyCosts["greedy"]
		gap := (g - sol.Optimal) / g
		t.Logf("λ = %g: optimum %.10g greedy %.10g gap %.3g", lam, sol.Optimal, g, gap)
		if gap > prevGap+1e-12 {
			t.Errorf("λ = %g: relative gap %.3g grew from %.3g", lam, gap, prevGap)
		}
		prevGap = gap
	}
	if prevGap > 1e-9 {
		t.Errorf("λ = 1e-4: optimum is %.3g below greedy", prevGap)
	}
}

// tinyModel is small enough to enumerate every deterministic stationary
// policy: 3 slots of distinct costs (classes are single slots, so the class
// MDP's policies are all the policies), K = 2, R = 1, two values of Y.
func tinyModel(t testing.TB) PlacementModel {
	return PlacementModel{
		SlotCosts: []float64{1, 2, 5}, K: 2, Lambda: 1.2, Mu: 1, MaxWaiting: 0,
		Workload: jointWorkload(t,
			models.JointPoint{Data: 1, Reduces: 1, Prob: 0.5},
			models.JointPoint{Data: 10, Reduces: 1, Prob: 0.5}),
	}
}

func TestExactOptimumEqualsBruteForce(t *testing.T) {
	m := tinyModel(t)
	sol := solve(t, m, SolveOptions{})
	cls, err := m.validate()
	if err != nil {
		t.Fatal(err)
	}
	pm, err := buildPlacement(context.Background(), m, cls, discretize(m.Workload, 16).upper, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	n := 1
	for s := range pm.m.NumStates() {
		lo, hi := pm.m.ActionRange(s)
		n *= hi - lo
	}
	bf := pm.perJob(bruteForce(t, pm.m))
	t.Logf("%d states, %d deterministic policies: brute force %.12g, optimum %.12g, greedy %.12g",
		pm.m.NumStates(), n, bf, sol.Optimal, sol.PolicyCosts["greedy"])
	if n < 100 {
		t.Errorf("only %d policies enumerated", n)
	}
	if !scalar.EqualWithinAbsOrRel(bf, sol.Optimal, costTol, costTol) {
		t.Errorf("brute force %.12g, optimum %.12g", bf, sol.Optimal)
	}
}

func TestBracketNarrows(t *testing.T) {
	for _, tc := range []struct {
		name string
		data func() (models.Dist, error)
	}{
		{"uniform", func() (models.Dist, error) { return models.NewUniform(1, 100) }},
		{"exponential", func() (models.Dist, error) { return models.NewExponential(30) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := tc.data()
			if err != nil {
				t.Fatal(err)
			}
			r, err := models.NewUniformInt(1, 2)
			if err != nil {
				t.Fatal(err)
			}
			w, err := models.NewIndependentWorkload(x, r)
			if err != nil {
				t.Fatal(err)
			}
			m := PlacementModel{SlotCosts: []float64{1, 2, 4, 8}, K: 2, Lambda: 1, Mu: 1, MaxWaiting: 1, Workload: w}
			prev := math.Inf(1)
			bestLo, bestUp := math.Inf(-1), math.Inf(1)
			for _, bins := range []int{1, 2, 4, 8, 16} {
				sol := solve(t, m, SolveOptions{Bins: bins})
				width := sol.Upper - sol.Lower
				t.Logf("bins %2d: [%.8g, %.8g] width %.4g (%.3g%%), greedy %.8g, %d states",
					bins, sol.Lower, sol.Upper, width, 100*width/sol.Upper, sol.PolicyCosts["greedy"], sol.States)
				if sol.Exact || !math.IsNaN(sol.Optimal) {
					t.Errorf("continuous workload reported exact (%v, %g)", sol.Exact, sol.Optimal)
				}
				if !(sol.Lower <= sol.Upper) || width > prev*(1+1e-9) {
					t.Errorf("bins %d: bracket [%g, %g] (previous width %g)", bins, sol.Lower, sol.Upper, prev)
				}
				if sol.Upper > sol.PolicyCosts["greedy"]*(1+costTol) {
					t.Errorf("upper bound %g above greedy %g", sol.Upper, sol.PolicyCosts["greedy"])
				}
				prev = width
				bestLo, bestUp = max(bestLo, sol.Lower), min(bestUp, sol.Upper)
			}
			if bestLo > bestUp*(1+costTol) {
				t.Errorf("brackets do not intersect: best lower %g > best upper %g", bestLo, bestUp)
			}
			if prev > 0.01*bestUp {
				t.Errorf("16 bins leave a bracket of %.3g%%", 100*prev/bestUp)
			}
		})
	}
}

// A discrete law with more atoms than bins is bracketed, and the bracket
// contains its exact optimum.
func TestBracketContainsExactOptimum(t *testing.T) {
	var pts []models.JointPoint
	for i := range 10 {
		pts = append(pts, models.JointPoint{Data: float64(1 + 3*i*i), Reduces: 1 + i%2, Prob: 0.1})
	}
	m := PlacementModel{SlotCosts: []float64{1, 2, 4, 8}, K: 2, Lambda: 1, Mu: 1, MaxWaiting: 1, Workload: jointWorkload(t, pts...)}
	exact := solve(t, m, SolveOptions{Bins: 16})
	if !exact.Exact {
		t.Fatal("10 atoms with 16 bins should be exact")
	}
	for _, bins := range []int{1, 2, 3} {
		br := solve(t, m, SolveOptions{Bins: bins})
		if br.Exact || br.Lower > exact.Optimal*(1+costTol) || br.Upper < exact.Optimal*(1-costTol) {
			t.Errorf("bins %d: bracket [%.10g, %.10g] misses the optimum %.10g", bins, br.Lower, br.Upper, exact.Optimal)
		}
	}
}

func TestOptimalPolicyOnLiveStates(t *testing.T) {
	m := mediumModel(t)
	sol := solve(t, m, SolveOptions{})
	p := sol.Policy
	costs := m.SlotCosts // {1, 2, 4, 4, 8, 16}
	freeOf := func(held ...int) []policy.Slot {
		var out []policy.Slot
		for i, c := range costs {
			if !containsInt(held, i) {
				out = append(out, policy.Slot{Index: i, Cost: c})
			}
		}
		return out
	}
	// Slots 2 and 3 have the same cost: holding either is the same state.
	d1, err := p.Place(&policy.PlacementRequest{Free: freeOf(0, 2), X: 1, R: 1, Held: [][]int{{0}, {2}}})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := p.Place(&policy.PlacementRequest{Free: freeOf(0, 3), X: 1, R: 1, Held: [][]int{{0}, {3}}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(d1.Positions) != fmt.Sprint(d2.Positions) || d1.Reason == "" || !math.IsNaN(d1.Threshold) {
		t.Errorf("symmetric states decided %v and %v (%q)", d1.Positions, d2.Positions, d1.Reason)
	}
	// A large job on an empty cluster takes the cheapest slots; a small one
	// with two jobs in service keeps cheap slots free if the optimum says so.
	d, err := p.Place(&policy.PlacementRequest{Free: freeOf(), X: 1000, R: 2})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(d.Positions) != "[0 1]" {
		t.Errorf("large job on empty cluster: %v", d.Positions)
	}
	// Outside the model: K jobs in service → greedy with a reason.
	d, err = p.Place(&policy.PlacementRequest{Free: freeOf(0, 1, 2), X: 5, R: 1, Held: [][]int{{0}, {1}, {2}}})
	if err != nil || fmt.Sprint(d.Positions) != "[0]" || d.Reason == "" {
		t.Errorf("K in service: %v %q %v", d.Positions, d.Reason, err)
	}
	// Unknown cost → greedy.
	d, err = p.Place(&policy.PlacementRequest{Free: []policy.Slot{{Index: 9, Cost: 3.5}, {Index: 1, Cost: 2}}, X: 5, R: 1})
	if err != nil || fmt.Sprint(d.Positions) != "[0]" {
		t.Errorf("unknown cost: %v %q %v", d.Positions, d.Reason, err)
	}
	if _, err := p.Place(&policy.PlacementRequest{Free: freeOf(), X: 5, R: 0}); err == nil {
		t.Error("R = 0 accepted")
	}
}

func containsInt(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func TestPlacementModelErrors(t *testing.T) {
	base := smallModel(t)
	cases := []struct {
		name   string
		change func(m *PlacementModel)
		field  string
	}{
		{"unlimited waiting", func(m *PlacementModel) { m.MaxWaiting = -1 }, "MaxWaiting"},
		{"K zero", func(m *PlacementModel) { m.K = 0 }, "K"},
		{"lambda zero", func(m *PlacementModel) { m.Lambda = 0 }, "Lambda"},
		{"mu NaN", func(m *PlacementModel) { m.Mu = math.NaN() }, "Mu"},
		{"no slots", func(m *PlacementModel) { m.SlotCosts = nil }, "SlotCosts"},
		{"negative cost", func(m *PlacementModel) { m.SlotCosts = []float64{1, -2, 3, 4} }, "SlotCosts[1]"},
		{"too few slots", func(m *PlacementModel) { m.SlotCosts = []float64{1, 2, 3} }, "SlotCosts"},
		{"no workload", func(m *PlacementModel) { m.Workload = nil }, "Workload"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := base
			tc.change(&m)
			_, err := SolvePlacement(context.Background(), m, SolveOptions{})
			var me *ModelError
			if !errors.Is(err, ErrInvalidModel) || !errors.As(err, &me) || len(me.Field) < len(tc.field) || me.Field[:len(tc.field)] != tc.field {
				t.Fatalf("error %v, want a ModelError on %s", err, tc.field)
			}
			if _, err := EvaluatePolicy(context.Background(), m, greedyTest, SolveOptions{}); !errors.Is(err, ErrInvalidModel) {
				t.Fatalf("EvaluatePolicy error %v", err)
			}
		})
	}
	if _, err := SolvePlacement(context.Background(), base, SolveOptions{MaxStates: 10}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("MaxStates 10: error %v, want ErrTooLarge", err)
	}
	if _, err := SolvePlacement(context.Background(), base, SolveOptions{Bins: -1}); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("Bins -1: error %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SolvePlacement(ctx, base, SolveOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: error %v", err)
	}
}

func TestSolvePlacementProgress(t *testing.T) {
	last, calls, total := -1, 0, 0
	solve(t, mediumModel(t), SolveOptions{Progress: func(done, tot int) {
		calls++
		if done < last || done > tot || (total != 0 && tot != total) {
			t.Errorf("progress %d/%d after %d/%d", done, tot, last, total)
		}
		last, total = done, tot
	}})
	if calls == 0 || last != total {
		t.Errorf("progress ended at %d/%d after %d calls", last, total, calls)
	}
}

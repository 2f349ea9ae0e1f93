package adp

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/mdp/mdptest"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/policytest"
	"github.com/optd/optd/sim"
)

// scenario loads one of the repository's MDP-solvable scenarios.
var scenario = mdptest.Scenario

// light are fit parameters small enough for -race.
var light = map[string]map[string]float64{
	Name:         {"fit_steps": 40, "fit_jobs": 200},
	NameBidPrice: {"fit_steps": 10, "fit_jobs": 300},
}

// TestFittedPoliciesOnSolvableScenarios: on the three scenarios whose MDP
// optimum is known, each fitted policy, evaluated exactly on the MDP, costs
// at least the optimum (a check of the evaluation and of the decisions'
// validity) and less than greedy, the policy it starts from.
func TestFittedPoliciesOnSolvableScenarios(t *testing.T) {
	ctx := context.Background()
	for _, path := range mdptest.Solvable("../..") {
		s := scenario(t, path)
		m, sol := mdptest.Solve(t, s)
		greedy := sol.PolicyCosts["greedy"]
		for _, name := range []string{Name, NameBidPrice} {
			pol, err := policy.NewPlacement(name, policy.PlacementConfig{Params: light[name], Model: s.PlacementModel()})
			if err != nil {
				t.Fatal(err)
			}
			c, err := mdp.EvaluatePolicy(ctx, m, pol, mdp.SolveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %s %.4g = optimum × %.4f (greedy × %.4f)", path, name, c, c/sol.Optimal, greedy/sol.Optimal)
			if c < sol.Optimal*(1-1e-9) {
				t.Errorf("%s: %s costs %.9g, below the optimum %.9g", path, name, c, sol.Optimal)
			}
			if !(c < greedy) {
				t.Errorf("%s: %s costs %.6g, not below greedy's %.6g", path, name, c, greedy)
			}
		}
	}
}

// TestFitDeterministic: two fits of the same model, seed and parameters
// (apart from the process cache, as after a server restart) decide the
// same on random requests; another seed fits another value function.
func TestFitDeterministic(t *testing.T) {
	s := scenario(t, "../../search/testdata/mdp-small.json")
	reqs := policytest.PlacementRequests(s.SlotCosts, s.K, 2, 200, 7)
	for _, name := range []string{Name, NameBidPrice} {
		key := func(seed uint64) fitKey {
			m := s.PlacementModel()
			m.Seed = seed
			return fitKey{Policy: name, Model: m, Classes: 6, Steps: 8, Jobs: 150}
		}
		decide := func(k fitKey) []string {
			mk, err := k.fit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			pol, err := mk(context.Background(), 1)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			var out []string
			for _, req := range reqs {
				d, err := pol.Place(req)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprint(d.Positions))
			}
			return out
		}
		a, b, other := decide(key(1)), decide(key(1)), decide(key(2))
		if !slices.Equal(a, b) {
			t.Errorf("%s: two fits of one model and seed decide differently", name)
		}
		if slices.Equal(a, other) {
			t.Logf("%s: seeds 1 and 2 decide the same on every request (possible, but the fits differ)", name)
		}
	}
}

// TestBadConfiguration: every refused configuration names the field, its
// value and the limit, with no Go type name or package prefix, and builds
// nothing (no fit starts).
func TestBadConfiguration(t *testing.T) {
	s := scenario(t, "../../search/testdata/mdp-small.json")
	good := s.PlacementModel()
	with := func(f func(m *policy.PlacementModel)) *policy.PlacementModel {
		m := *good
		f(&m)
		return &m
	}
	for _, c := range []struct {
		model  *policy.PlacementModel
		params map[string]float64
		want   string
	}{
		{nil, nil, "needs the cluster's queueing model"},
		{with(func(m *policy.PlacementModel) { m.ArrivalRate = 0 }), nil, "model.arrival_rate = 0: must be finite and > 0"},
		{with(func(m *policy.PlacementModel) { m.ArrivalRate = math.Inf(1) }), nil, "model.arrival_rate = +Inf"},
		{with(func(m *policy.PlacementModel) { m.ServiceRate = math.NaN() }), nil, "model.service_rate = NaN"},
		{with(func(m *policy.PlacementModel) { m.MaxJobsInService = 0 }), nil, "model.max_jobs_in_service = 0"},
		{with(func(m *policy.PlacementModel) { m.MaxWaiting = -2 }), nil, "model.max_waiting = -2"},
		{with(func(m *policy.PlacementModel) { m.MaxWaiting, m.ArrivalRate = -1, 2 }), nil, "the queue is unstable"},
		{with(func(m *policy.PlacementModel) { m.Workload = nil }), nil, "model.workload"},
		{with(func(m *policy.PlacementModel) { m.SlotCosts = []float64{1, -1, 2, 3, 4, 5} }), nil, "model.slot_costs[1] = -1"},
		{with(func(m *policy.PlacementModel) { m.SlotCosts = m.SlotCosts[:3] }), nil, "need at least max_jobs_in_service·max_reduces = 3·2 = 6 slots"},
		{good, map[string]float64{"classes": 1}, "parameter classes = 1, must be in [2, 24]"},
		{good, map[string]float64{"speed": 1}, "speed"},
		{good, map[string]float64{"fit_steps": 2000, "fit_jobs": 4000}, "must be ≤ 8000000 (the fit's work bound)"},
	} {
		_, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: c.model, Params: c.params})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v %v: error %v, want %q", c.model, c.params, err, c.want)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "*policy.") || strings.Contains(msg, "adp.") || strings.Contains(msg, "float64") {
			t.Errorf("error %q names Go types or packages", msg)
		}
	}
	_, err := policy.NewPlacement(NameBidPrice, policy.PlacementConfig{Model: good, Params: map[string]float64{"fit_steps": 5, "fit_jobs": 4000, "classes": 200}})
	if want := "fit_jobs·classes = 4000·200 = 800000, must be ≤ 200000 (the fit's memory bound)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// FuzzCheckModel: the model's validation never panics, and a model it
// accepts has what the fit needs.
func FuzzCheckModel(f *testing.F) {
	f.Add(0.6, 1.0, 3, 2, 8, 1.0, 4)
	f.Add(-1.0, 0.0, 0, -3, 0, math.NaN(), 0)
	f.Add(2.0, 1.0, 1, -1, 1, 0.0, 1)
	f.Fuzz(func(t *testing.T, lambda, mu float64, k, waiting, slots int, cost float64, maxR int) {
		if slots < 0 || slots > 1<<12 || maxR < 1 || maxR > 64 {
			return
		}
		data, _ := models.NewUniform(1, 100)
		reduces, _ := models.NewUniformInt(1, maxR)
		w, err := models.NewIndependentWorkload(data, reduces)
		if err != nil {
			t.Fatal(err)
		}
		costs := make([]float64, slots)
		for i := range costs {
			costs[i] = cost * float64(i)
		}
		m := &policy.PlacementModel{ArrivalRate: lambda, ServiceRate: mu, MaxJobsInService: k, MaxWaiting: waiting, Workload: w, SlotCosts: costs}
		if err := m.Check(Name); err == nil {
			if !(lambda > 0 && mu > 0) || k < 1 || waiting < -1 || len(costs) < k*maxR {
				t.Errorf("accepted %+v", m)
			}
		}
	})
}

// TestModelSlotLimit: the policies' model check allows what the simulator
// does, no more (package policy keeps its own copy of the limit).
func TestModelSlotLimit(t *testing.T) {
	if policy.MaxModelSlots != sim.MaxSlots {
		t.Errorf("policy.MaxModelSlots = %d, sim.MaxSlots = %d: they must agree", policy.MaxModelSlots, sim.MaxSlots)
	}
}

// TestBuildsOnFig9Cluster: on the Fig. 9 cluster (1000 slot costs, R up
// to 10), where adp-penalty's fit used to fall (its penalized LP about
// −3000 per job against +90, the policy twice greedy's cost, refused by
// the check against greedy of that time), a light fit builds at K = 100
// (ρ 0.6 and 0.9) and K = 10, and under heavy load it is served with its
// fitted values, not backed off to greedy: its decisions on requests over
// the cheapest slots differ from greedy's on at least minDiffer of 300 (a
// fitted value function that moved; at ρ 0.6 it departs from greedy on a
// few requests only, and only the build is checked).
func TestBuildsOnFig9Cluster(t *testing.T) {
	for _, c := range []struct {
		k         int
		rho       float64
		seed      uint64
		minDiffer int
	}{{100, 0.6, 1, 0}, {100, 0.9, 1, 6}, {10, 0.9, 2, 6}} {
		data := fmt.Sprintf(`{"slots": {"count": 1000, "cost": {"kind": "uniform", "min": 1, "max": 100}},
			"max_jobs_in_service": %d, "arrival_rate": %g, "service_rate": 1,
			"workload": {"data": {"kind": "uniform", "min": 1, "max": 100}, "reduces": {"kind": "uniform-int", "min": 1, "max": 10}},
			"jobs": 1000, "seed": %d}`, c.k, c.rho, c.seed)
		s, err := sim.DecodeScenario([]byte(data), ".")
		if err != nil {
			t.Fatal(err)
		}
		params := map[string]float64{"fit_steps": 20, "fit_jobs": 100}
		pol, err := policy.NewPlacement(Name, policy.PlacementConfig{Params: params, Model: s.PlacementModel()})
		if err != nil {
			t.Errorf("K = %d, ρ = %g: %v", c.k, c.rho, err)
			continue
		}
		differ := 0
		// the cheapest slots, where the jobs contend and the fitted value
		// decides (most of 120 drawn at random would never be contended)
		cheapest := slices.Sorted(slices.Values(s.SlotCosts))[:120]
		reqs := policytest.PlacementRequests(cheapest, c.k, 10, 300, c.seed)
		for _, req := range reqs {
			d, err := pol.Place(req)
			if err != nil {
				t.Fatal(err)
			}
			g, err := placement.Greedy{}.Place(req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Positions, g.Positions) {
				differ++
			}
		}
		t.Logf("K = %d, ρ = %g: %d of %d decisions differ from greedy's", c.k, c.rho, differ, len(reqs))
		if differ < c.minDiffer {
			t.Errorf("K = %d, ρ = %g: %d of %d decisions differ from greedy's, want at least %d: the fitted value function did not move", c.k, c.rho, differ, len(reqs), c.minDiffer)
		}
	}
}

// TestBacksOffToGreedy: the check against greedy halves the value scale
// of a lookahead that costs more than greedy on the check runs, down to
// 0 (greedy's placement): here the costliest placement stands for the
// lookahead at every scale and is backed off to 0; greedy in its place
// (not worse than itself) keeps the scale asked for; a lookahead that is
// the costliest at the full scale only is served at half of it; scale 0
// is served without a check.
func TestBacksOffToGreedy(t *testing.T) {
	s := scenario(t, "../../search/testdata/mdp-small.json")
	k := fitKey{Policy: Name, Model: s.PlacementModel(), Classes: 6, Steps: 8, Jobs: 150}
	chk := &sim.Scenario{SlotCosts: s.SlotCosts, K: s.K, ArrivalRate: s.ArrivalRate, ServiceRate: s.ServiceRate,
		MaxWaiting: s.MaxWaiting, Workload: s.Workload, Jobs: k.Jobs, Replications: k.Steps + checkRuns, Seed: 5}
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		at    func(float64) policy.Placement
		scale float64
		want  float64
	}{
		{"costliest at every scale", func(float64) policy.Placement { return placement.Costliest{} }, 1, 0},
		{"greedy at every scale", func(float64) policy.Placement { return placement.Greedy{} }, 1.5, 1.5},
		{"costliest at full scale", func(s float64) policy.Placement {
			if s == 2 {
				return placement.Costliest{}
			}
			return placement.Greedy{}
		}, 2, 1},
		{"scale 0", func(float64) policy.Placement { t.Fatal("scale 0 was checked"); return nil }, 0, 0},
	} {
		got, err := k.backOff(ctx, chk, c.at, c.scale)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: served at value_scale %g, want %g", c.name, got, c.want)
		}
	}
}

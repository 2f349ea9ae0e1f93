package mdpoptimal

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/mdp"
	"github.com/optd/optd/mdp/mdptest"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/builtin"
	"github.com/optd/optd/policy/policytest"
	"github.com/optd/optd/sim"
)

// solvable are the repository's MDP-solvable placement scenarios.
var solvable = mdptest.Solvable("../..")

// scenario loads a placement scenario.
var scenario = mdptest.Scenario

// table is the placement simulator's mdp-optimal, as `optd bound` builds
// it: mdp.SolvePlacement's Policy.
func table(t *testing.T, s *sim.Scenario) (policy.Placement, *mdp.PlacementSolution) {
	t.Helper()
	_, sol := mdptest.Solve(t, s)
	return sol.Policy, sol
}

// TestEqualsPlacementSimulatorTable: on every solvable scenario the
// registered policy, built from the scenario's model, (1) decides as the
// bound's table on random requests of jobs in service, (2) costs exactly
// the MDP's optimum when evaluated on the MDP, and (3) gives the placement
// simulator the same cost as the table on every replication.
func TestEqualsPlacementSimulatorTable(t *testing.T) {
	ctx := context.Background()
	for n, path := range solvable {
		s := scenario(t, path)
		tab, sol := table(t, s)
		pol, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel()})
		if err != nil {
			t.Fatal(err)
		}
		if pol.Name() != Name {
			t.Fatalf("name %q", pol.Name())
		}
		differ := 0
		for k, req := range policytest.PlacementRequests(s.SlotCosts, s.K-1, s.Workload.MaxReduces(), 300, uint64(n+1)) {
			got, err1 := pol.Place(req)
			want, err2 := tab.Place(req)
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: request %d: %v, %v", path, k, err1, err2)
			}
			if !slices.Equal(got.Positions, want.Positions) || got.Reason != want.Reason {
				t.Fatalf("%s: request %d: registered %v (%s), table %v (%s)", path, k, got.Positions, got.Reason, want.Positions, want.Reason)
			}
			if !slices.Equal(got.Positions, firstR(req.R)) {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("%s: the optimal policy took the R cheapest slots on every request: the check tells nothing", path)
		}
		m, _ := mdp.ModelOf(s)
		c, err := mdp.EvaluatePolicy(ctx, m, pol, mdp.SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(c-sol.Optimal) > 1e-9*sol.Optimal {
			t.Errorf("%s: registered policy costs %.12g on the MDP, optimum %.12g", path, c, sol.Optimal)
		}
		light := *s
		light.Jobs, light.WarmupJobs = 1000, 100
		for rep := range 1 {
			r, err := light.RunReplication(ctx, rep, []sim.NamedFactory{
				{Name: "table", New: func(uint64) (policy.Placement, error) { return tab, nil }},
				{Name: Name, New: func(uint64) (policy.Placement, error) { return pol, nil }},
			}, false)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := r.Results["table"].TotalCost, r.Results[Name].TotalCost; a != b {
				t.Errorf("%s replication %d: table's total cost %.12g, registered %.12g", path, rep, a, b)
			}
		}
		t.Logf("%s: optimum %.6g (greedy %.6g); %d of 300 requests not on the R cheapest slots", path, sol.Optimal, sol.PolicyCosts["greedy"], differ)
	}
}

func firstR(r int) []int {
	out := make([]int, r)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestBuildsReuseTheSolve: a second build on the same model (a new
// replication, a server restart in the same process) returns the same
// decisions without solving again, the model's seed notwithstanding.
func TestBuildsReuseTheSolve(t *testing.T) {
	s := scenario(t, solvable[0])
	m := s.PlacementModel()
	a, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: m})
	if err != nil {
		t.Fatal(err)
	}
	m2 := *m
	m2.Seed = 99
	b, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: &m2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if a.(*Placement).Placement != b.(*Placement).Placement {
		t.Error("the second build solved again")
	}
	if got := b.(policy.ModelSlotted).ModelSlotCosts(); !slices.Equal(got, s.SlotCosts) {
		t.Errorf("model slot costs %v, want %v", got, s.SlotCosts)
	}
}

// TestBadModelsRejected: a missing or invalid model, or one beyond a
// limit, is refused with the field or parameter, its value and the limit.
func TestBadModelsRejected(t *testing.T) {
	s := scenario(t, solvable[1])
	big := scenario(t, "../../examples/placement-scenario.json").PlacementModel() // about 9,000 states, 3 MB
	for _, tc := range []struct {
		name   string
		edit   func(m *policy.PlacementModel) *policy.PlacementModel
		params map[string]float64
		want   []string
	}{
		{"no model", func(*policy.PlacementModel) *policy.PlacementModel { return nil }, nil, []string{"needs the cluster's queueing model"}},
		{"unlimited waiting", func(m *policy.PlacementModel) *policy.PlacementModel {
			m.MaxWaiting = -1
			m.ArrivalRate = 0.5
			return m
		}, nil,
			[]string{"model.max_waiting = -1", "[0, 65535]"}},
		{"waiting beyond the MDP's", func(m *policy.PlacementModel) *policy.PlacementModel { m.MaxWaiting = 70000; return m }, nil,
			[]string{"model.max_waiting = 70000"}},
		{"arrival rate", func(m *policy.PlacementModel) *policy.PlacementModel { m.ArrivalRate = 0; return m }, nil,
			[]string{"model.arrival_rate = 0"}},
		{"slot cost", func(m *policy.PlacementModel) *policy.PlacementModel {
			m.SlotCosts = slices.Clone(m.SlotCosts)
			m.SlotCosts[2] = math.Inf(1)
			return m
		}, nil, []string{"model.slot_costs[2] = +Inf"}},
		{"too few slots", func(m *policy.PlacementModel) *policy.PlacementModel { m.SlotCosts = m.SlotCosts[:5]; return m }, nil,
			[]string{"model.slot_costs = 5 slots", "max_jobs_in_service·max_reduces"}},
		{"no workload", func(m *policy.PlacementModel) *policy.PlacementModel { m.Workload = nil; return m }, nil,
			[]string{"model.workload"}},
		{"states", func(m *policy.PlacementModel) *policy.PlacementModel { return m }, map[string]float64{"max_states": 10},
			[]string{"more than max_states = 10 states"}},
		{"memory", func(*policy.PlacementModel) *policy.PlacementModel { return big }, map[string]float64{"max_memory_mb": 1},
			[]string{"more than max_memory_mb = 1", "states needs about"}},
		{"parameter", func(m *policy.PlacementModel) *policy.PlacementModel { return m }, map[string]float64{"bins": 0},
			[]string{"bins = 0", "[1, 64]"}},
		{"unknown parameter", func(m *policy.PlacementModel) *policy.PlacementModel { return m }, map[string]float64{"horizon": 3},
			[]string{"horizon"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := *s.PlacementModel()
			_, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: tc.edit(&m), Params: tc.params})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "SolveOptions") || strings.Contains(err.Error(), "mdp:") {
				t.Errorf("error %q names the implementation", err)
			}
		})
	}
	// A cached solution is held to a later build's limits as a new solve.
	if _, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel()}); err != nil {
		t.Fatal(err)
	}
	if _, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel(), Params: map[string]float64{"max_states": 10}}); err == nil ||
		!strings.Contains(err.Error(), "max_states = 10") {
		t.Errorf("cached solution under max_states = 10: %v", err)
	}
}

// TestTimeLimit: a model far beyond what a second solves is stopped at
// time_limit_s = 1 with the limit named (the MDP of 40 slot classes, 8
// jobs in service: millions of states, refused by max_states = 10⁶ only
// after seconds of building).
func TestTimeLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("spends its one-second limit; skipped with -short")
	}
	m := hugeModel(t)
	_, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: m, Params: map[string]float64{"time_limit_s": 1, "max_states": 1e6, "max_memory_mb": 16384}})
	if err == nil || !strings.Contains(err.Error(), "time_limit_s = 1 s") {
		t.Fatalf("error %v, want the time limit named", err)
	}
	// Restoring a policy accepted before (a server loading a stored
	// cluster): the time limit does not apply, the model-only limits do
	// (here max_states, reached after more than the second).
	_, err = policy.NewPlacement(Name, policy.PlacementConfig{Model: m, Restoring: true, Params: map[string]float64{"time_limit_s": 1, "max_states": 1e6, "max_memory_mb": 16384}})
	if err == nil || strings.Contains(err.Error(), "time_limit_s") || !strings.Contains(err.Error(), "max_states = 1000000") {
		t.Fatalf("restoring: error %v, want max_states named and not the time limit", err)
	}
}

// TestContextStopsTheSolve: a build whose context ends while the MDP is
// being solved (a registering client's deadline) fails at once with the
// context's error, not the time limit's (the model of TestTimeLimit, far
// beyond what the context allows). That the solve then stops, since no
// other build waits for it, is package memo's TestLastCallerLeavingCancels
// with the solve's own context honoured as TestTimeLimit shows.
func TestContextStopsTheSolve(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a large model; skipped with -short")
	}
	m := hugeModel(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: m, Context: ctx, Params: map[string]float64{"max_states": 1e6, "max_memory_mb": 16384}})
	if !errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "time_limit_s") {
		t.Fatalf("error %v, want the context's deadline", err)
	}
}

// hugeModel is a model far beyond what a second solves: 40 slot classes,
// 8 jobs in service, millions of states.
func hugeModel(t *testing.T) *policy.PlacementModel {
	m := scenario(t, "../../examples/placement-scenario.json").PlacementModel()
	m.SlotCosts = make([]float64, 40)
	for i := range m.SlotCosts {
		m.SlotCosts[i] = float64(i + 1)
	}
	m.MaxJobsInService, m.MaxWaiting = 8, 4
	return m
}

// TestLimitsOf: the parameters set the limits; restoring keeps the model's
// limits and drops the time limit.
func TestLimitsOf(t *testing.T) {
	v := map[string]float64{"max_states": 1234, "max_memory_mb": 56, "time_limit_s": 7.5}
	if got, want := limitsOf(v, false), (limits{states: 1234, memoryMB: 56, time: 7500 * time.Millisecond}); got != want {
		t.Errorf("limitsOf = %+v, want %+v", got, want)
	}
	if got, want := limitsOf(v, true), (limits{states: 1234, memoryMB: 56}); got != want {
		t.Errorf("limitsOf restoring = %+v, want %+v", got, want)
	}
}

// FuzzNew: any model is refused with an error or solved into a policy that
// decides valid placements; never a panic.
func FuzzNew(f *testing.F) {
	f.Add(1.2, 1.0, 3, 2, uint8(6), 2.0, 40.0, uint8(2), 1000.0)
	f.Add(0.0, 1.0, 0, -1, uint8(0), -1.0, math.NaN(), uint8(0), 0.5)
	f.Add(1e308, 1e-300, 1, 65536, uint8(3), math.Inf(1), 1e308, uint8(9), 1e9)
	f.Fuzz(func(t *testing.T, lam, mu float64, k, w int, slots uint8, c0, x float64, r uint8, maxStates float64) {
		slots %= 12
		costs := make([]float64, slots)
		for i := range costs {
			costs[i] = c0 + float64(i%4)
		}
		wl, err := models.NewJointWorkload([]models.JointPoint{{Data: x, Reduces: int(r%4) + 1, Prob: 1}})
		if err != nil {
			wl = nil
		}
		m := &policy.PlacementModel{ArrivalRate: lam, ServiceRate: mu, MaxJobsInService: k, MaxWaiting: w, Workload: wl, SlotCosts: costs}
		pol, err := New(policy.PlacementConfig{Model: m, Params: map[string]float64{"max_states": math.Min(math.Max(math.Round(maxStates), 1), 20000)}})
		if err != nil {
			if strings.Contains(err.Error(), "runtime") || err.Error() == "" {
				t.Fatalf("error %q", err)
			}
			return
		}
		for _, req := range policytest.PlacementRequests(costs, max(k-1, 1), int(r%4)+1, 5, 1) {
			d, err := pol.Place(req)
			if err != nil {
				t.Fatalf("place: %v", err)
			}
			if len(d.Positions) != req.R {
				t.Fatalf("%d positions for R = %d", len(d.Positions), req.R)
			}
		}
	})
}

// ExampleNew shows the policy on the repository's example model.
func ExampleNew() {
	s, err := sim.LoadScenario("../../examples/placement-scenario.json")
	if err != nil {
		panic(err)
	}
	pol, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel()})
	if err != nil {
		panic(err)
	}
	free := []policy.Slot{{Index: 0, Cost: 1}, {Index: 1, Cost: 1}, {Index: 2, Cost: 2}, {Index: 3, Cost: 3}, {Index: 7, Cost: 21}}
	d, err := pol.Place(&policy.PlacementRequest{Free: free, X: 5, R: 1, Held: [][]int{{4}, {5, 6}}})
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Positions)
	// Output: [0]
}

// TestBoundKeepsItsOwn: with this package registered, `optd bound`'s
// mdp-optimal (its own solve of the scenario's MDP) still runs, costs the
// same as the registered policy on the same replications, and is listed
// once among the known policies.
func TestBoundKeepsItsOwn(t *testing.T) {
	s := scenario(t, solvable[0])
	s.Jobs, s.WarmupJobs, s.Replications = 1000, 100, 2
	out, err := bound.Run(context.Background(), bound.DefaultBackend(), s, bound.Request{Settings: bound.Settings{
		Policies: []string{"greedy", Name}, Bounds: []string{bound.BoundsMDP}, Bins: bound.DefaultBins, MaxStates: bound.DefaultMaxStates}}, bound.Progress{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel()})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for rep := range s.Replications {
		r, err := s.RunReplication(context.Background(), rep, []sim.NamedFactory{{Name: Name, New: func(uint64) (policy.Placement, error) { return pol, nil }}}, false)
		if err != nil {
			t.Fatal(err)
		}
		sum += r.Results[Name].MeanCost
	}
	if got, want := out.Policies[Name].MeanCost, sum/float64(s.Replications); math.Abs(got-want) > 1e-9*want {
		t.Errorf("bound's mdp-optimal costs %.12g, the registered policy %.12g", got, want)
	}
	if n := strings.Count(strings.Join(bound.PolicyNames(), ","), Name); n != 1 {
		t.Errorf("known policies %v list %s %d times", bound.PolicyNames(), Name, n)
	}
}

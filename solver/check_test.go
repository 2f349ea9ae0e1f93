package solver

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// checkInstance is two nodes, two resources and two task types.
func checkInstance() *Instance {
	return &Instance{
		Weights: []float64{1, 2},
		Nodes:   []Node{{ID: "a", Capacity: []int64{10, 4}}, {ID: "b", Capacity: []int64{6, 6}}},
		Tasks:   []TaskType{{ID: "s", Demand: []int64{2, 1}, Count: 5}, {ID: "g", Demand: []int64{0, 3}, Count: 1}},
	}
}

func TestCheckCountsAcceptsAssignments(t *testing.T) {
	in := checkInstance()
	// a: 4 s (8, 4); b: 1 s and 1 g (2, 4): 5 s of value 4 and 1 g of value 6
	v, err := CheckCounts(in, [][]int{{4, 0}, {1, 1}})
	if err != nil || v != 5*in.Value(0)+in.Value(1) {
		t.Fatalf("value %v, err %v; want %v", v, err, 5*in.Value(0)+in.Value(1))
	}
	if v, err := CheckCounts(in, [][]int{{0, 0}, {0, 0}}); err != nil || v != 0 {
		t.Fatalf("empty assignment: %v, %v", v, err)
	}
}

func TestCheckCountsRefusesWhatBreaksARow(t *testing.T) {
	in := checkInstance()
	for _, c := range []struct {
		x    [][]int
		want string
	}{
		{[][]int{{5, 0}, {0, 0}}, `node "a": r1 used 5 > capacity 4`},
		{[][]int{{0, 0}, {4, 0}}, `node "b": r0 used 8 > capacity 6`},
		{[][]int{{3, 0}, {3, 0}}, `task "s": 6 placed > count 5`},
		{[][]int{{0, 1}, {0, 1}}, `task "g": 2 placed > count 1`},
		{[][]int{{-1, 0}, {0, 0}}, `node "a", task "s": count -1 < 0`},
		{[][]int{{0, 0}}, "1 rows of counts, want one per node (2)"},
		{[][]int{{0}, {0, 0}}, `node "a": 1 counts, want one per task type (2)`},
		{[][]int{{math.MaxInt64/2 + 1, 0}, {0, 0}}, `node "a": demand in r0 overflows`},
	} {
		if _, err := CheckCounts(in, c.x); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err %v, want %q", c.x, err, c.want)
		}
	}
}

func TestCheckResultOfEveryMethod(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for k := range 20 {
		in, err := RandomInstance(rng, RandomSpec{Nodes: 1 + k%6, Types: 1 + k%5, Resources: 1 + k%3})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range Methods() {
			r, err := Solve(context.Background(), in, m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			v, err := CheckResult(in, r)
			if err != nil || math.Abs(v-r.Objective) > objTol*max(1, v) {
				t.Fatalf("instance %d, %s: checked value %v (err %v), result's objective %v", k, m, v, err, r.Objective)
			}
		}
	}
}

func TestCheckResultRefusesUnknownIDs(t *testing.T) {
	in := checkInstance()
	for _, c := range []struct {
		a    Assignment
		want string
	}{
		{Assignment{Node: "z", Task: "s", Count: 1}, `node "z", which the instance does not have`},
		{Assignment{Node: "a", Task: "z", Count: 1}, `task "z", which the instance does not have`},
		{Assignment{Node: "a", Task: "s", Count: 0}, `node "a", task "s": count 0, want > 0`},
	} {
		if _, err := CheckResult(in, &Result{Assignment: []Assignment{c.a}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.a, err, c.want)
		}
	}
}

func TestLPCountsReadsColumns(t *testing.T) {
	in := checkInstance()
	// solvers print integers within their tolerance
	x, err := LPCounts(in, map[string]float64{"x_0_0": 3.9999999, "x_1_1": 1e-9 + 1})
	if err != nil || x[0][0] != 4 || x[1][1] != 1 || x[0][1] != 0 || x[1][0] != 0 {
		t.Fatalf("%v, %v", x, err)
	}
	for _, name := range []string{"x_2_0", "x_0_2", "x_-1_0", "y_0_0", "x_0_0_0", "x_00_1", "x_0"} {
		if _, err := LPCounts(in, map[string]float64{name: 1}); err == nil || !strings.Contains(err.Error(), "is not one of the program's") {
			t.Errorf("%s: err %v", name, err)
		}
	}
	for _, v := range []float64{math.NaN(), math.Inf(1), 1e12} {
		if _, err := LPCounts(in, map[string]float64{"x_0_0": v}); err == nil || !strings.Contains(err.Error(), "not a count") {
			t.Errorf("%v: err %v", v, err)
		}
	}
}

// FuzzLPCounts feeds LPCounts and CheckCounts any column name and value:
// an error or counts that CheckCounts then judges, never a panic.
func FuzzLPCounts(f *testing.F) {
	f.Add("x_0_0", 1.0)
	f.Add("x_1_1", -2.5)
	f.Add("x_9999999999999999999_0", 1.0)
	f.Add("x_0_1 ", math.Inf(-1))
	in := checkInstance()
	f.Fuzz(func(t *testing.T, name string, v float64) {
		x, err := LPCounts(in, map[string]float64{name: v})
		if err != nil {
			return
		}
		if _, err := CheckCounts(in, x); err == nil {
			for j := range x {
				for i, k := range x[j] {
					if k < 0 {
						t.Fatalf("%s = %v: count %d of node %d, task %d accepted", name, v, k, j, i)
					}
				}
			}
		}
	})
}

// TestPeerClaimRefuted: a peer's claimed optimum below the value of
// optd's checked result is refuted; an equal one, or one not claimed
// optimal, is not.
func TestPeerClaimRefuted(t *testing.T) {
	ex := &Result{Objective: 1079296}
	for _, c := range []struct {
		peer cbcResult
		want bool
	}{
		{cbcResult{optimal: true, objective: 1079040}, true},
		{cbcResult{optimal: true, objective: 1079296}, false},
		{cbcResult{optimal: false, objective: 1079040}, false},
	} {
		if got := c.peer.refutedBy(ex); got != c.want {
			t.Errorf("%+v: refuted %v, want %v", c.peer, got, c.want)
		}
	}
}

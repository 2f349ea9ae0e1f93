package benchmarks

import (
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/solver"
)

// TestITASeeds: the comparison runs every seed in full mode, one in quick
// mode, and OPTD_ITA_SEEDS seeds when set; a bad count is an error naming
// the variable and the range, and the cases hold the four HaSTE tables and
// that many seeds of every family.
func TestITASeeds(t *testing.T) {
	full, quick := &Env{}, &Env{Config: Config{Quick: true}}
	for _, tc := range []struct {
		env  *Env
		set  string
		want int
	}{
		{full, "", solver.FamilySeeds}, {quick, "", 1}, {full, "3", 3}, {quick, "2", 2},
	} {
		t.Setenv("OPTD_ITA_SEEDS", tc.set)
		got, err := itaSeeds(tc.env)
		if err != nil || got != tc.want {
			t.Errorf("quick %v, OPTD_ITA_SEEDS=%q: %d seeds (%v), want %d", tc.env.Quick, tc.set, got, err, tc.want)
		}
		cases, err := itaCases(tc.env)
		if err != nil || len(cases) != len(solver.BuiltinNames())+tc.want*len(solver.Families()) {
			t.Errorf("quick %v, OPTD_ITA_SEEDS=%q: %d cases (%v)", tc.env.Quick, tc.set, len(cases), err)
		}
	}
	for _, bad := range []string{"0", "-1", "11", "x"} {
		t.Setenv("OPTD_ITA_SEEDS", bad)
		if _, err := itaSeeds(full); err == nil || !strings.Contains(err.Error(), "OPTD_ITA_SEEDS") || !strings.Contains(err.Error(), "1..10") {
			t.Errorf("OPTD_ITA_SEEDS=%q: error %v", bad, err)
		}
	}
}

// TestJudgePeer: a peer's answer is checked against the instance and
// against optd's: a claimed optimum below optd's checked objective is
// refuted (not proven), counts that break a row are no solution, a
// solution above optd's bound is an error, and an agreeing proof stands;
// the summary lists the refuted and the invalid answers.
func TestJudgePeer(t *testing.T) {
	in := &solver.Instance{
		Weights: []float64{1},
		Nodes:   []solver.Node{{ID: "a", Capacity: []int64{10}}},
		Tasks:   []solver.TaskType{{ID: "s", Demand: []int64{3}, Count: 5}, {ID: "u", Demand: []int64{1}, Count: 1}},
	}
	// the optimum: 3 of s and 1 of u, worth 10
	ex := &solver.Result{Objective: 10, UpperBound: 10, Optimal: true}
	for _, c := range []struct {
		name          string
		peer          PeerResult
		proven, refut bool
		invalid, err  string
	}{
		{"agrees", PeerResult{Optimal: true, Status: "Optimal", Values: map[string]float64{"x_0_0": 3, "x_0_1": 1}}, true, false, "", ""},
		{"claims less", PeerResult{Optimal: true, Status: "Optimal", Values: map[string]float64{"x_0_0": 3}}, false, true, "", ""},
		{"stopped below", PeerResult{Status: "Time limit reached", Values: map[string]float64{"x_0_0": 2}}, false, false, "", ""},
		{"breaks a row", PeerResult{Optimal: true, Status: "Optimal", Values: map[string]float64{"x_0_0": 4}}, false, false, `node "a": r0 used 12 > capacity 10`, ""},
		{"above the bound", PeerResult{Status: "Optimal", Values: map[string]float64{"x_0_0": 3, "x_0_1": 1}}, false, false, "", "above optd's proven bound"},
		{"not a column", PeerResult{Values: map[string]float64{"y": 1}}, false, false, "", "not one of the program's"},
	} {
		exc := *ex
		if c.name == "above the bound" {
			exc.Objective, exc.UpperBound, exc.Optimal = 9, 9, false
		}
		out, err := judgePeer(in, &exc, &c.peer)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || out.proven != c.proven || out.refuted != c.refut || !strings.Contains(out.invalid, c.invalid) || (c.invalid == "") != (out.invalid == "") {
			t.Errorf("%s: %+v, %v", c.name, out, err)
		}
	}
	rows := []itaRow{{
		c:    itaCase{family: "f", seed: 1},
		optd: itaRun{proven: true, seconds: 0.1, objective: 10}, bound: 10,
		cbc: itaRun{proven: false, seconds: 1, invalid: "node \"a\": r0 used 12 > capacity 10"}, haveCBC: true,
		hgs: itaRun{proven: false, refuted: true, seconds: 2, objective: 9}, haveHS: true,
	}}
	sum := itaSummary(rows, 10*time.Second)
	for _, want := range []string{"refuted by optd's checked assignment (not counted as proven) (1): f-1 (HiGHS claimed 9 optimal; optd's checked assignment is worth 10)",
		"breaks a row of the instance (no solution) (1): f-1 (CBC: node \"a\": r0 used 12 > capacity 10)"} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	// neither peer's answer counts as proven
	if tab := itaFamilyTable(rows, 10*time.Second); !strings.Contains(tab, "| f | 1 | 1 | 100 ms / 100 ms | 0 | 1 s / 1 s | 0 | 2 s / 2 s |") {
		t.Errorf("family table:\n%s", tab)
	}
}

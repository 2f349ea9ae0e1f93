package policy

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/optd/optd/models"
)

// stub is a placement policy for the registry's tests.
type stub struct{}

func (stub) Name() string { return "stub" }

func (stub) Place(*PlacementRequest) (PlacementDecision, error) { return PlacementDecision{}, nil }

func TestRegistryNamesAreUniqueAcrossKinds(t *testing.T) {
	f := func(PlacementConfig) (Placement, error) { return stub{}, nil }
	s := func(HeartbeatConfig) (Stages, error) { return Stages{}, nil }
	Must(RegisterPlacement("test-unique", f))
	for _, err := range []error{
		RegisterPlacement("test-unique", f),
		RegisterAssignment("test-unique", s),
		RegisterAddOn("test-unique", s),
	} {
		if !errors.Is(err, ErrDuplicatePolicy) {
			t.Errorf("second registration of a name: %v, want ErrDuplicatePolicy", err)
		}
	}
	for _, err := range []error{RegisterPlacement("", f), RegisterAddOn("a+b", s), RegisterAssignment("x", nil), RegisterPlacement("y", nil)} {
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("bad registration: %v, want ErrInvalidConfig", err)
		}
	}
	if _, err := NewPlacement("nope", PlacementConfig{}); !errors.Is(err, ErrUnknownPolicy) {
		t.Errorf("unknown policy: %v", err)
	}
	if slices.Contains(AddOnNames(), "test-unique") || !slices.Contains(PlacementNames(), "test-unique") {
		t.Error("a placement policy is listed as an add-on, or not as a placement policy")
	}
}

func TestRegisterPlacementFamilyRejectsBadDeclarations(t *testing.T) {
	f := func(PlacementConfig) (Placement, error) { return stub{}, nil }
	for _, tc := range []struct {
		name   string
		params []Param
	}{
		{"empty name", []Param{{Name: "", Max: 1}}},
		{"separator in name", []Param{{Name: "a;b", Max: 1}}},
		{"default outside", []Param{{Name: "a", Min: 0, Max: 1, Default: 2}}},
		{"log with min 0", []Param{{Name: "a", Min: 0, Max: 1, Log: true}}},
		{"twice", []Param{{Name: "a", Max: 1}, {Name: "a", Max: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := RegisterPlacement("test-bad-"+tc.name, f, tc.params...); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("got %v, want ErrInvalidConfig", err)
			}
			if slices.Contains(PlacementNames(), "test-bad-"+tc.name) {
				t.Error("registered despite the error")
			}
		})
	}
}

func TestPlacementSpecRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		spec   string
		name   string
		params map[string]float64
	}{
		{"greedy", "greedy", nil},
		{"state-threshold:base=2;ratio=0.25", "state-threshold", map[string]float64{"base": 2, "ratio": 0.25}},
		{" rolling-horizon:horizon=3 ", "rolling-horizon", map[string]float64{"horizon": 3}},
	} {
		name, params, err := ParsePlacementSpec(tc.spec)
		if err != nil || name != tc.name || len(params) != len(tc.params) {
			t.Fatalf("%q: got %q %v %v", tc.spec, name, params, err)
		}
		for k, v := range tc.params {
			if params[k] != v {
				t.Errorf("%q: %s = %v, want %v", tc.spec, k, params[k], v)
			}
		}
		n2, p2, err := ParsePlacementSpec(FormatPlacementSpec(name, params))
		if err != nil || n2 != name || len(p2) != len(params) {
			t.Errorf("%q: round trip gave %q %v %v", tc.spec, n2, p2, err)
		}
	}
	for _, bad := range []string{"", ":a=1", "x:", "x:a", "x:a=1;a=2", "x:a=NaN", "x:a=1e999", "x:=1", "x:a=1x"} {
		if _, _, err := ParsePlacementSpec(bad); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%q: got %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func FuzzParsePlacementSpec(f *testing.F) {
	for _, s := range []string{"greedy", "state-threshold:base=2;ratio=0.25", "x:a=1;a=2", ":", "a:b=1e308;c=-0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		name, params, err := ParsePlacementSpec(spec)
		if err != nil {
			return
		}
		n2, p2, err := ParsePlacementSpec(FormatPlacementSpec(name, params))
		if err != nil || n2 != name || len(p2) != len(params) {
			t.Fatalf("%q: round trip gave %q %v %v", spec, n2, p2, err)
		}
		for k, v := range params {
			if p2[k] != v {
				t.Fatalf("%q: %s = %v after the round trip, was %v", spec, k, p2[k], v)
			}
		}
	})
}

// randomRequests draws requests on a cluster of n slots with costs 1..n.

// observed is a stage that is a Speculator, a LaunchFilter and an Observer
// at once.
type observed struct{ finished int }

func (*observed) Name() string                                       { return "test-observed" }
func (*observed) Speculate(*Heartbeat) ([]Action, []Veto)            { return nil, nil }
func (*observed) Admit(*Heartbeat, Action) (bool, string)            { return true, "" }
func (o *observed) TaskFinished(*ClusterView, *AttemptView, float64) { o.finished++ }

type rankNothing struct{}

func (rankNothing) Name() string             { return "test-rank-nothing" }
func (rankNothing) Rank(*Heartbeat) []Action { return nil }

// TestPipelineReportsEachFinishedTaskOnce: a stage that plays two parts
// (as SEPB and BASE do) is one member of the pipeline, observed once.
func TestPipelineReportsEachFinishedTaskOnce(t *testing.T) {
	o := &observed{}
	Must(RegisterAssignment("test-rank-nothing", func(HeartbeatConfig) (Stages, error) { return Stages{Assigner: rankNothing{}}, nil }))
	Must(RegisterAddOn("test-observed", func(HeartbeatConfig) (Stages, error) {
		return Stages{Speculators: []Speculator{o}, Filters: []LaunchFilter{o}}, nil
	}))
	p, err := NewPipeline("test-rank-nothing+test-observed", HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	p.TaskFinished(&ClusterView{}, &AttemptView{}, 1)
	if o.finished != 1 || !p.HasObservers() {
		t.Fatalf("the stage saw the finished task %d times", o.finished)
	}
}

// offer is an assigner that offers a start of each of its jobs' pending
// maps, in job order, as long as they fit.
type offer struct{}

func (offer) Name() string { return "test-offer" }
func (offer) Rank(hb *Heartbeat) []Action {
	var out []Action
	for _, j := range hb.Cluster.Jobs {
		if a, ok := hb.StartCandidate(j, models.MapTask, nil); ok {
			out = append(out, a)
		}
	}
	return out
}

// refuse vetoes every start of job "j1" and records what it is told.
type refuse struct {
	admits    int
	committed []string
}

func (*refuse) Name() string { return "test-refuse" }
func (r *refuse) Admit(_ *Heartbeat, a Action) (bool, string) {
	r.admits++
	return a.Job != "j1", "j1 is refused"
}
func (r *refuse) Commit(_ *Heartbeat, a Action, v *Veto) {
	what := "started"
	if v != nil {
		what = "vetoed by " + v.Stage
	}
	r.committed = append(r.committed, fmt.Sprintf("%s#%d %s", a.Job, a.Task, what))
}

// TestPipelineRecordsVetoes: a candidate the filter refuses is not started,
// the next one is; the refusal is in the decision once (with its stage and
// reason) although the assigner offers it again after each start, and the
// Committer hears of every decided candidate in order.
func TestPipelineRecordsVetoes(t *testing.T) {
	r := &refuse{}
	Must(RegisterAssignment("test-offer", func(HeartbeatConfig) (Stages, error) { return Stages{Assigner: offer{}}, nil }))
	Must(RegisterAddOn("test-refuse", func(HeartbeatConfig) (Stages, error) { return Stages{Filters: []LaunchFilter{r}}, nil }))
	p, err := NewPipeline("test-offer+test-refuse", HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	n := &NodeView{ID: "n", Capacity: models.Resources{4}, Free: models.Resources{4}}
	job := func(id string, maps int) *JobView {
		j := &JobView{ID: id, Demand: map[models.TaskType]models.Resources{models.MapTask: {1}}}
		for k := range maps {
			j.PendingMaps = append(j.PendingMaps, PendingTask{Index: k})
		}
		return j
	}
	c := &ClusterView{Resources: models.ResourceNames{"vcores"}, Nodes: []*NodeView{n}, Jobs: []*JobView{job("j1", 1), job("j2", 2)}}
	d := p.Heartbeat(c, n)
	if len(d.Actions) != 2 || d.Actions[0].Job != "j2" || d.Actions[1].Job != "j2" || d.Dropped != 0 {
		t.Fatalf("actions %v", d.Actions)
	}
	if len(d.Vetoes) != 1 || d.Vetoes[0] != (Veto{Stage: "test-refuse", Kind: ActionStart, Job: "j1", Type: models.MapTask, Task: 0, Reason: "j1 is refused"}) {
		t.Fatalf("vetoes %+v", d.Vetoes)
	}
	want := []string{"j1#0 vetoed by test-refuse", "j2#0 started", "j1#0 vetoed by test-refuse", "j2#1 started", "j1#0 vetoed by test-refuse"}
	if !slices.Equal(r.committed, want) {
		t.Fatalf("commits %q, want %q", r.committed, want)
	}
}

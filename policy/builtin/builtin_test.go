package builtin_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/builtin"
	"github.com/optd/optd/policy/filter"
	"github.com/optd/optd/policy/policytest"
	"github.com/optd/optd/policy/sharing"
	"github.com/optd/optd/policy/slots"
	"github.com/optd/optd/policy/speculation"
)

func TestTunableParams(t *testing.T) {
	stages := []policy.Tunable{speculation.NewLATE(), speculation.NewHadoopSpeculation(), speculation.NewSEPB(), speculation.NewBASE(1), sharing.NewResourceStealing(sharing.StealLTM), sharing.NewDynamicAdjust()}
	pi, _ := slots.NewPIDHSA(slots.DefaultDHSAParams())
	pd, _ := slots.NewPDDHSA(slots.DefaultDHSAParams())
	ds, _ := filter.NewDelayScheduling(5, 5)
	stages = append(stages, pi, pd, ds)
	for _, s := range stages {
		ps := s.Params()
		if len(ps) == 0 {
			t.Fatalf("%T: no params", s)
		}
		for _, p := range ps {
			if !(p.Default >= p.Min && p.Default <= p.Max) {
				t.Fatalf("%T %s: default %v outside [%v, %v]", s, p.Name, p.Default, p.Min, p.Max)
			}
			if err := s.SetParam(p.Name, p.Max+1); err == nil {
				t.Fatalf("%T %s: out of range accepted", s, p.Name)
			}
			if err := s.SetParam(p.Name, p.Default); err != nil {
				t.Fatalf("%T %s: %v", s, p.Name, err)
			}
		}
		if err := s.SetParam("nope", 1); err == nil {
			t.Fatalf("%T: unknown parameter accepted", s)
		}
	}
	d := sharing.NewDynamicAdjust()
	if err := d.SetParam("max_per_heartbeat", 1.5); err == nil {
		t.Fatal("fractional integer parameter accepted")
	}
	if err := d.SetParam("theta_slow", 2); err != nil || d.ThetaSlow != 2 {
		t.Fatalf("theta_slow: %v, %v", err, d.ThetaSlow)
	}
	if _, err := slots.NewPIDHSA(slots.DHSAParams{PercentageOfBorrowedMapSlots: 2, PercentageOfBorrowedReduceSlots: 1, MapSlotWeight: 1, ReduceSlotWeight: 1}); err == nil {
		t.Fatal("percentage 2 accepted")
	}
}

// Every documented name of this family (docs/formats.md#cluster-scenario) is registered, and the spec
// examples build.
func TestSlotSpeculationSharingRegistered(t *testing.T) {
	for _, spec := range []string{
		"mrv1-static", "pi-dhsa", "pd-dhsa",
		"pi-dhsa+sepb+slot-prescheduling", "pi-dhsa+delay-scheduling+slot-prescheduling+sepb",
		"mrv1-static+speculation-hadoop", "mrv1-static+late", "mrv1-static+base",
		"mrv1-static+resource-stealing-even+base", "mrv1-static+resource-stealing-fcm",
		"mrv1-static+resource-stealing-stlm", "mrv1-static+resource-stealing-ltlm",
		"mrv1-static+resource-stealing-stm", "mrv1-static+resource-stealing-ltm+base",
		"pd-dhsa+dynamic-adjust", "mrv1-static+load-balance+resource-stealing-even",
	} {
		if _, err := policy.NewPipeline(spec, policy.HeartbeatConfig{}); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	if _, err := policy.NewPipeline("pi-dhsa+pd-dhsa", policy.HeartbeatConfig{}); err == nil {
		t.Error("two assignment policies accepted")
	}
}

func TestPipelineParams(t *testing.T) {
	p, err := policy.NewPipeline("pi-dhsa+sepb+base+resource-stealing-ltm", policy.HeartbeatConfig{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, q := range p.Params() {
		count[q.Name]++
	}
	for _, want := range []string{"pi-dhsa.percentage_of_borrowed_map_slots", "sepb.kill_factor", "base.min_run_s", "resource-stealing-ltm.slow_task_threshold"} {
		if count[want] != 1 {
			t.Fatalf("param %s listed %d times in %v", want, count[want], p.Params())
		}
	}
	if err := p.SetParam("sepb.kill_factor", 3); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"kill_factor", "nope.kill_factor", "sepb.nope", "sepb.kill_factor=0"} {
		if err := p.SetParam(bad, 1); err == nil {
			t.Fatalf("SetParam(%q) accepted", bad)
		}
	}
	if err := p.SetParam("sepb.kill_factor", 0); err == nil {
		t.Fatal("out-of-range value accepted")
	}
}

// TestSnapshotsBelongToTheirPipeline: a pipeline that learns nothing has
// no snapshot; a snapshot restores only into a pipeline of the same
// stages, and a malformed one is refused with ErrInvalidConfig.
func TestSnapshotsBelongToTheirPipeline(t *testing.T) {
	build := func(spec string) *policy.Pipeline {
		t.Helper()
		p, err := policy.NewPipeline(spec, policy.HeartbeatConfig{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if data, err := build("fair+resource-stealing-even+late").Snapshot(); data != nil || err != nil {
		t.Fatalf("a stateless pipeline's snapshot: %s, %v", data, err)
	}
	data, err := build("haste+delay-scheduling+sepb").Snapshot()
	if err != nil || data == nil {
		t.Fatalf("snapshot: %s, %v", data, err)
	}
	if err := build("haste+delay-scheduling+sepb").Restore(data); err != nil {
		t.Fatalf("restoring into the same spec: %v", err)
	}
	for _, tc := range []struct {
		spec string
		data []byte
	}{
		{"haste+sepb", data},                               // a stage fewer
		{"haste+delay-scheduling+sepb+base", data},         // a stage more
		{"haste+delay-scheduling+sepb", []byte(`{`)},       // not JSON
		{"haste+delay-scheduling+sepb", []byte(`{"x":1}`)}, // unknown field
		{"haste+delay-scheduling+sepb", []byte(`{"initialized":true,"stages":{"haste":{},"sepb":{"kills":[{"job":"j","type":"map","task":0,"count":0}]},"delay-scheduling":{}}}`)},
	} {
		if err := build(tc.spec).Restore(tc.data); !errors.Is(err, policy.ErrInvalidConfig) {
			t.Errorf("Restore(%s) into %s: %v, want ErrInvalidConfig", tc.data, tc.spec, err)
		}
	}
	if err := build("haste").Restore(nil); err != nil {
		t.Errorf("Restore(nil): %v", err)
	}
}

// FuzzPipelineRestore: a stored snapshot is decoded by Restore, which never
// panics; one it accepts snapshots again to bytes that restore to the same
// bytes (the state survives a second restart unchanged).
func FuzzPipelineRestore(f *testing.F) {
	for _, spec := range []string{"haste+delay-scheduling+sepb+base+dynamic-adjust", "pi-dhsa"} {
		p, _ := policy.NewPipeline(spec, fuzzConfig(spec == "pi-dhsa"))
		data, _ := p.Snapshot()
		f.Add(spec == "pi-dhsa", data)
	}
	f.Add(false, []byte(`{"initialized":true,"stages":{"haste":{"plan":{"n1":[{"job":"j","count":2}]}},"delay-scheduling":{"wait_since":{"j":3.5}},`+
		`"sepb":{"kills":[{"job":"j","type":"map","task":1,"count":1}]},"base":{"on_node":[{"job":"j","type":"reduce","node":"n","rates":[0.5]}],"all":[]},`+
		`"dynamic-adjust":{"tracks":[{"attempt":3,"type":"reduce","job":"j","k":1,"progress":0.5,"last_s":9,"start_k":4,"done":[null]}],"phase_means":[],"targets":[{"attempt":3,"vcores":4}],"calls":7}}}`))
	f.Add(true, []byte(`{"initialized":false,"stages":{"reduce-placement":{"plans":[{"job":"j","stage":0,"left":{"n1":2},"reason":"r"}],"estimator":{"window":3,"observations":[],"seen":0}}}}`))
	f.Add(true, []byte(`{"initialized":false,"stages":{"reduce-placement":{"plans":[],"estimator":{"window":3,"observations":[],"seen":0},"links":{"link_mbps":100,"rack_mbps":{"r1":40}}}}}`))
	f.Add(true, []byte(`{"initialized":false,"stages":{"reduce-placement":{"plans":[],"estimator":{"window":3,"observations":[],"seen":0},"policy":{"pcg":"AAAA"}}}}`))
	f.Fuzz(func(t *testing.T, dhsa bool, data []byte) {
		spec := "haste+delay-scheduling+sepb+base+dynamic-adjust"
		if dhsa {
			spec = "pi-dhsa"
		}
		p, err := policy.NewPipeline(spec, fuzzConfig(dhsa))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Restore(data); err != nil {
			if !errors.Is(err, policy.ErrInvalidConfig) {
				t.Fatalf("Restore: %v, not ErrInvalidConfig", err)
			}
			return
		}
		once, err := p.Snapshot()
		if err != nil {
			t.Fatalf("Snapshot of a restored pipeline: %v", err)
		}
		q, _ := policy.NewPipeline(spec, fuzzConfig(dhsa))
		if err := q.Restore(once); err != nil {
			t.Fatalf("Restore of its own snapshot %s: %v", once, err)
		}
		twice, _ := q.Snapshot()
		if !bytes.Equal(once, twice) {
			t.Fatalf("snapshot changed through a restore:\n%s\n%s", once, twice)
		}
	})
}

// fuzzConfig is FuzzPipelineRestore's configuration: the pi-dhsa pipeline
// also places reducers (receding-horizon, whose estimator is in the
// snapshot).
func fuzzConfig(dhsa bool) policy.HeartbeatConfig {
	if !dhsa {
		return policy.HeartbeatConfig{}
	}
	p, err := policy.NewPlacement("receding-horizon", policy.PlacementConfig{})
	if err != nil {
		panic(err)
	}
	return policy.HeartbeatConfig{Placement: p}
}

// TestMaxStartsBoundsAHeartbeat: a node that every pending task fits (no
// demands) starts at most MaxStarts tasks per heartbeat under each
// assignment policy, the first ones FIFO would (distinct tasks), and all
// of them without a bound. The sizes are a family, not one case.
func TestMaxStartsBoundsAHeartbeat(t *testing.T) {
	for _, spec := range []string{"fifo", "fair", "drf", "capacity"} {
		for _, tc := range []struct{ jobs, maps, max int }{{1, 50, 7}, {3, 20, 1}, {2, 5, 100}, {4, 30, 0}} {
			f := policytest.NewFixture(0, false, models.ResourceNames{"vcores"})
			n := f.Node("n", "r", 0, 0, models.Resources{4})
			for j := range tc.jobs {
				f.Job(fmt.Sprint("j", j), tc.maps, 0, models.Resources{0})
			}
			c := f.Finish()
			p, err := policy.NewPipeline(spec, policy.HeartbeatConfig{MaxStarts: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			d := p.Heartbeat(c, n)
			want := tc.jobs * tc.maps
			if tc.max > 0 {
				want = min(want, tc.max)
			}
			seen := map[policy.TaskKey]bool{}
			for _, a := range d.Actions {
				k := policy.TaskKey{Job: a.Job, Type: a.Type, Task: a.Task}
				if a.Kind != policy.ActionStart || seen[k] {
					t.Fatalf("%s %+v: action %+v is not a new start", spec, tc, a)
				}
				seen[k] = true
			}
			if len(d.Actions) != want {
				t.Errorf("%s %+v: %d starts, want %d", spec, tc, len(d.Actions), want)
			}
		}
	}
}

package models

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// scoreTol bounds the rounding error of a progress score (k + f)/n and of
// its inverse.
const scoreTol = 1e-14

func TestProgressScore(t *testing.T) {
	tests := []struct {
		name     string
		typ      TaskType
		phase    Phase
		progress float64
		want     float64
	}{
		{"pending map", MapTask, PhasePending, 0, 0},
		{"map: fraction of input read", MapTask, PhaseMap, 0.4, 0.4},
		{"map done", MapTask, PhaseMap, 1, 1},
		{"pending reduce", ReduceTask, PhasePending, 0, 0},
		// LATE (Zaharia et al., OSDI'08): halfway through copy is 1/6,
		// halfway through reduce is 5/6.
		{"halfway through copy", ReduceTask, PhaseShuffle, 0.5, 1.0 / 6},
		{"copy done", ReduceTask, PhaseShuffle, 1, 1.0 / 3},
		{"sort starts", ReduceTask, PhaseSort, 0, 1.0 / 3},
		{"sort three quarters", ReduceTask, PhaseSort, 0.75, 1.0/3 + 0.25},
		{"halfway through reduce", ReduceTask, PhaseReduce, 0.5, 5.0 / 6},
		{"reduce done", ReduceTask, PhaseReduce, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := Task{ID: "t", JobID: "j", Type: tc.typ, Phase: tc.phase, Progress: tc.progress}
			if err := task.Validate(nil); err != nil {
				t.Fatal(err)
			}
			got := task.ProgressScore()
			if !scalar.EqualWithinAbsOrRel(got, tc.want, scoreTol, scoreTol) {
				t.Errorf("score = %g, want %g", got, tc.want)
			}
		})
	}
}

// TestPhaseAtInvertsProgressScore checks the score and its inverse against
// each other: PhaseAt(ProgressScore(p, f)) = (p, f) away from phase
// boundaries, and ProgressScore(PhaseAt(s)) = s for any s.
func TestPhaseAtInvertsProgressScore(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, typ := range []TaskType{MapTask, ReduceTask} {
		for range 1000 {
			s := rng.Float64()
			p, f := PhaseAt(typ, s)
			if got := ProgressScore(typ, p, f); !scalar.EqualWithinAbsOrRel(got, s, scoreTol, scoreTol) {
				t.Fatalf("%v: score %g → (%v, %g) → %g", typ, s, p, f, got)
			}
			for _, q := range typ.Phases() {
				f := 0.01 + 0.98*rng.Float64()
				gp, gf := PhaseAt(typ, ProgressScore(typ, q, f))
				if gp != q || !scalar.EqualWithinAbsOrRel(gf, f, 1e-12, 1e-12) {
					t.Fatalf("%v: (%v, %g) → (%v, %g)", typ, q, f, gp, gf)
				}
			}
		}
	}
	boundaries := []struct {
		typ   TaskType
		s     float64
		phase Phase
		f     float64
	}{
		{ReduceTask, 0, PhaseShuffle, 0},
		{ReduceTask, 1.0 / 3, PhaseSort, 0},
		{ReduceTask, 2.0 / 3, PhaseReduce, 0},
		{ReduceTask, 1, PhaseReduce, 1},
		{MapTask, 0, PhaseMap, 0},
		{MapTask, 1, PhaseMap, 1},
	}
	for _, b := range boundaries {
		p, f := PhaseAt(b.typ, b.s)
		if p != b.phase || !scalar.EqualWithinAbsOrRel(f, b.f, scoreTol, scoreTol) {
			t.Errorf("PhaseAt(%v, %g) = %v, %g; want %v, %g", b.typ, b.s, p, f, b.phase, b.f)
		}
	}
}

func TestProgressScorePanics(t *testing.T) {
	tests := map[string]func(){
		"progress above 1":  func() { ProgressScore(MapTask, PhaseMap, 1.5) },
		"NaN progress":      func() { ProgressScore(ReduceTask, PhaseSort, math.NaN()) },
		"pending with work": func() { ProgressScore(MapTask, PhasePending, 0.5) },
		"wrong phase":       func() { ProgressScore(MapTask, PhaseShuffle, 0.5) },
		"invalid type":      func() { ProgressScore(TaskType(0), PhaseMap, 0.5) },
		"PhaseAt score":     func() { PhaseAt(MapTask, -0.1) },
		"PhaseAt type":      func() { PhaseAt(TaskType(9), 0.5) },
	}
	for name, f := range tests {
		t.Run(name, func(t *testing.T) { expectPanic(t, "models: ", f) })
	}
}

func TestTaskValidate(t *testing.T) {
	names := MemoryVCores()
	good := Task{ID: "t1", JobID: "j1", Type: MapTask, Phase: PhaseMap, Progress: 0.3,
		Demand: Resources{1024, 1}, PreferredNodes: []string{"n1", "n2"}}
	if err := good.Validate(names); err != nil {
		t.Fatalf("valid task rejected: %v", err)
	}
	tests := []struct {
		name   string
		modify func(*Task)
		want   string
	}{
		{"empty id", func(t *Task) { t.ID = "" }, `models: invalid task: id = "": empty`},
		{"empty job", func(t *Task) { t.JobID = "" }, `models: invalid task: job_id = "": empty (task "t1")`},
		{"unset type", func(t *Task) { t.Type = 0 }, `models: invalid task: type = 0: want map (1) or reduce (2)`},
		{"reduce phase on a map", func(t *Task) { t.Phase = PhaseSort },
			`models: invalid task: phase = "sort": not a phase of a map task (pending or [map])`},
		{"map phase on a reduce", func(t *Task) { t.Type = ReduceTask },
			`models: invalid task: phase = "map": not a phase of a reduce task (pending or [shuffle sort reduce])`},
		{"unknown phase", func(t *Task) { t.Phase = 9 },
			`models: invalid task: phase = "Phase(9)": not a phase of a map task (pending or [map])`},
		{"progress above 1", func(t *Task) { t.Progress = 1.25 }, `models: invalid task: progress = 1.25: must be in [0, 1]`},
		{"NaN progress", func(t *Task) { t.Progress = math.NaN() }, `models: invalid task: progress = NaN: must be in [0, 1]`},
		{"pending with progress", func(t *Task) { t.Phase = PhasePending },
			`models: invalid task: progress = 0.3: a pending task has progress 0`},
		{"negative demand", func(t *Task) { t.Demand = Resources{-1, 1} },
			`models: invalid task: demand[0] = -1: negative memory_mb`},
		{"demand dimensions", func(t *Task) { t.Demand = Resources{1, 1, 1} },
			`models: invalid task: demand = [1 1 1]: has 3 dimensions, want 2 [memory_mb vcores]`},
		{"huge demand", func(t *Task) { t.Demand = Resources{1 << 60, 1} },
			`models: invalid task: demand[0] = 1152921504606846976: memory_mb above 2^53`},
		{"empty preferred node", func(t *Task) { t.PreferredNodes = []string{"n1", ""} },
			`models: invalid task: preferred_nodes[1] = "": empty`},
		{"preferred node twice", func(t *Task) { t.PreferredNodes = []string{"n1", "n1"} },
			`models: invalid task: preferred_nodes[1] = "n1": listed twice`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task := good
			task.PreferredNodes = append([]string(nil), good.PreferredNodes...)
			tc.modify(&task)
			err := task.Validate(names)
			if !errors.Is(err, ErrInvalidTask) || err.Error() != tc.want {
				t.Errorf("Validate = %v\nwant %q", err, tc.want)
			}
		})
	}
}

func TestTaskTypeAndPhaseText(t *testing.T) {
	for _, tt := range []TaskType{MapTask, ReduceTask} {
		b, err := tt.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back TaskType
		if err := back.UnmarshalText(b); err != nil || back != tt || string(b) != tt.String() {
			t.Errorf("%v → %q → %v, %v", tt, b, back, err)
		}
	}
	for p := PhasePending; p <= PhaseReduce; p++ {
		b, err := p.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Phase
		if err := back.UnmarshalText(b); err != nil || back != p || string(b) != p.String() {
			t.Errorf("%v → %q → %v, %v", p, b, back, err)
		}
	}
	var tt TaskType
	if err := tt.UnmarshalText([]byte("MAP")); !errors.Is(err, ErrInvalidTask) ||
		err.Error() != `models: invalid task: task type = "MAP": want map or reduce` {
		t.Errorf("UnmarshalText(MAP) = %v", err)
	}
	if _, err := TaskType(3).MarshalText(); !errors.Is(err, ErrInvalidTask) {
		t.Errorf("MarshalText(3) = %v, want an error", err)
	}
	var p Phase
	if err := p.UnmarshalText([]byte("merge")); !errors.Is(err, ErrInvalidTask) ||
		err.Error() != `models: invalid task: phase = "merge": want pending, map, shuffle, sort or reduce` {
		t.Errorf("UnmarshalText(merge) = %v", err)
	}
	if _, err := Phase(7).MarshalText(); !errors.Is(err, ErrInvalidTask) {
		t.Errorf("MarshalText(7) = %v, want an error", err)
	}
	b, err := json.Marshal(Task{ID: "t", JobID: "j", Type: ReduceTask, Phase: PhaseSort, Progress: 0.5})
	if want := `{"id":"t","job_id":"j","type":"reduce","phase":"sort","progress":0.5}`; err != nil || string(b) != want {
		t.Errorf("JSON = %s, %v; want %s", b, err, want)
	}
}

// FuzzTaskJSON decodes arbitrary JSON as a task: decoding and validation
// never panic, and a valid task has a progress score in [0, 1].
func FuzzTaskJSON(f *testing.F) {
	f.Add(`{"id":"t","job_id":"j","type":"reduce","phase":"sort","progress":0.5}`)
	f.Add(`{"id":"t","job_id":"j","type":"map","phase":"pending","progress":0,"demand":[1,2],"preferred_nodes":["a","b"]}`)
	f.Add(`{"id":"t","job_id":"j","type":"map","phase":"shuffle","progress":2}`)
	f.Add(`{"type":"MAP"}`)
	f.Fuzz(func(t *testing.T, in string) {
		var task Task
		if json.Unmarshal([]byte(in), &task) != nil {
			return
		}
		if err := task.Validate(MemoryVCores()); err != nil {
			if !errors.Is(err, ErrInvalidTask) {
				t.Fatalf("error %v does not wrap ErrInvalidTask", err)
			}
			return
		}
		if s := task.ProgressScore(); !(s >= 0 && s <= 1) {
			t.Fatalf("score %g of valid task %+v", s, task)
		}
	})
}

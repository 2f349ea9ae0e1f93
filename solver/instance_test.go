package solver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const validJSON = `{"weights": [1, 1],
 "nodes": [{"id": "n1", "capacity": [8192, 8]}, {"id": "n2", "capacity": [4096, 4]}],
 "tasks": [{"id": "job1-map", "demand": [1024, 2], "count": 52}]}`

func TestDecodeInstanceErrors(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string // substrings of the error
	}{
		{"unknown top-level field", `{"nodes": [], "tasks": [], "extra": 1}`, []string{`extra: unknown field (allowed here: resource_names, weights, nodes, tasks)`}},
		{"unknown nested field", `{"nodes": [{"id": "a", "capacity": [1], "cpu": 2}], "tasks": []}`, []string{`nodes[0].cpu: unknown field`}},
		{"wrong type", `{"nodes": [{"id": "a", "capacity": ["x"]}], "tasks": []}`, []string{`nodes[0].capacity[0] = "x": must be an integer`}},
		{"fractional count", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1.5}]}`, []string{"tasks[0].count = 1.5: must be an integer"}},
		{"trailing data", validJSON + ` {}`, []string{"trailing data"}},
		{"no nodes", `{"nodes": [], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes", "at least one node"}},
		{"no tasks", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": []}`, []string{"tasks", "at least one task type"}},
		{"negative capacity", `{"nodes": [{"id": "a", "capacity": [4, -3]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{"nodes[0].capacity[1] = -3", "non-negative"}},
		{"negative demand", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [-1], "count": 1}]}`, []string{"tasks[0].demand[0] = -1"}},
		{"negative count", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": -2}]}`, []string{"tasks[0].count = -2", "non-negative"}},
		{"NaN weight", `{"weights": [NaN], "nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"invalid character"}},
		{"negative weight", `{"weights": [-1], "nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"weights[0] = -1", "positive"}},
		{"zero weight", `{"weights": [0], "nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"weights[0] = 0"}},
		{"dimension mismatch", `{"nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"tasks[0].demand", "want k = 2"}},
		{"weights mismatch", `{"weights": [1], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{"nodes[0].capacity", "want k = 1"}},
		{"duplicate node", `{"nodes": [{"id": "a", "capacity": [4]}, {"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes[1].id", "duplicate"}},
		{"duplicate task", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}, {"id": "t", "demand": [2], "count": 1}]}`, []string{"tasks[1].id", "duplicate"}},
		{"empty id", `{"nodes": [{"id": "", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes[0].id"}},
		{"count limit", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1000001}]}`, []string{"tasks[0].count", "the limit of 1000000"}},
		{"quantity limit", `{"nodes": [{"id": "a", "capacity": [1099511627777]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes[0].capacity[0]", "the limit of 1099511627776"}},
		{"resource names too few", `{"resource_names": ["mem"], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{"nodes[0].capacity", "want k = 1"}},
		{"resource names against weights", `{"resource_names": ["mem", "cpu"], "weights": [1], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{"weights = [1]", "want k = 2"}},
		{"empty resource name", `{"resource_names": ["mem", ""], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{`resource_names[1] = ""`, "required"}},
		{"duplicate resource name", `{"resource_names": ["mem", "mem"], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{`resource_names[1] = "mem"`, "duplicate", "index 0"}},
		{"long resource name", `{"resource_names": ["` + strings.Repeat("m", MaxIDLength+1) + `"], "nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"resource_names[0]", "limit of 256 bytes"}},
		{"resource names limit", `{"resource_names": ["a","b","c","d","e","f","g","h","i"], "nodes": [{"id": "a", "capacity": [1]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"resource_names = 9", "the limit of 8 resources"}},
		{"resource name not a string", `{"resource_names": [1], "nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"resource_names[0] = 1"}},
		{"resource limit", `{"nodes": [{"id": "a", "capacity": [1,1,1,1,1,1,1,1,1]}], "tasks": [{"id": "t", "demand": [1,1,1,1,1,1,1,1,1], "count": 1}]}`, []string{"the limit of 8 resources"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeInstance(strings.NewReader(tc.json))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalidInstance) {
				t.Errorf("error %v does not wrap ErrInvalidInstance", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDecodeInstanceValid(t *testing.T) {
	in, err := DecodeInstance(strings.NewReader(validJSON))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Nodes) != 2 || in.Tasks[0].Count != 52 || in.Value(0) != 1026 {
		t.Fatalf("decoded %+v", in)
	}
	// weights omitted: every weight is 1
	in2, err := DecodeInstance(strings.NewReader(`{"nodes": [{"id": "a", "capacity": [4, 2]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`))
	if err != nil || in2.Value(0) != 2 {
		t.Fatalf("default weights: %v %v", in2, err)
	}
}

// TestUtilizationByName: the result names each resource's utilization by
// the instance's resource_names, or r0, r1, … without them, on every
// method and on random instances (names of any length and order); the
// arrays and the map agree and the cluster fraction is Σ used / Σ capacity.
func TestUtilizationByName(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 20))
	for trial := range 16 {
		in, err := RandomInstance(rng, RandomSpec{Nodes: 1 + rng.IntN(4), Types: 1 + rng.IntN(3), Resources: 1 + rng.IntN(4), Supply: 1.5})
		if err != nil {
			t.Fatal(err)
		}
		named := trial%2 == 0
		if named {
			for p := range in.Resources() {
				in.ResourceNames = append(in.ResourceNames, fmt.Sprintf("res-%d-%c", trial, 'z'-p))
			}
		}
		for _, method := range Methods() {
			r, err := Solve(t.Context(), in, method, Options{TimeLimit: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			u := r.Utilization
			if len(u.Names) != in.Resources() || len(u.ByResource) != in.Resources() {
				t.Fatalf("trial %d %s: names %v, by_resource %v for %d resources", trial, method, u.Names, u.ByResource, in.Resources())
			}
			for p, name := range u.Names {
				want := fmt.Sprintf("r%d", p)
				if named {
					want = in.ResourceNames[p]
				}
				var used, total int64
				for j, n := range u.Nodes {
					used += n.Used[p]
					total += in.Nodes[j].Capacity[p]
				}
				if name != want || u.ByResource[name] != u.Resources[p] || u.Resources[p] != fraction(used, total) {
					t.Fatalf("trial %d %s resource %d: name %q (want %q), by_resource %v, resources %v, used %d of %d",
						trial, method, p, name, want, u.ByResource[name], u.Resources[p], used, total)
				}
			}
		}
	}
}

// TestEdgeInstancesAccepted solves the inputs a live cluster produces and
// that earlier versions refused: zero capacities, zero demands, zero
// counts, task types that fit no node, a single node, a single resource.
func TestEdgeInstancesAccepted(t *testing.T) {
	tests := []struct {
		name, json string
		objective  float64
		unplaced   []string // task ids listed as fitting no node
	}{
		{"zero capacity", `{"nodes": [{"id": "a", "capacity": [4, 0]}, {"id": "b", "capacity": [2, 2]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 5}, {"id": "m", "demand": [1, 0], "count": 9}]}`, 2*2 + 4*1, nil},
		{"zero demand", `{"nodes": [{"id": "a", "capacity": [4, 4, 4]}], "tasks": [{"id": "gpu-free", "demand": [2, 0, 1], "count": 3}, {"id": "nothing", "demand": [0, 0, 0], "count": 4}]}`, 2 * 3, nil},
		{"zero count", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 0}, {"id": "u", "demand": [3], "count": 1}]}`, 3, nil},
		{"fits no node", `{"nodes": [{"id": "a", "capacity": [4, 4]}, {"id": "b", "capacity": [8, 2]}], "tasks": [{"id": "big", "demand": [5, 3], "count": 1}, {"id": "huge", "demand": [9, 1], "count": 2}, {"id": "s", "demand": [1, 1], "count": 1}]}`, 2, []string{"big", "huge"}},
		{"nothing fits", `{"nodes": [{"id": "a", "capacity": [0]}], "tasks": [{"id": "t", "demand": [1], "count": 3}]}`, 0, []string{"t"}},
		{"single node single resource", `{"nodes": [{"id": "a", "capacity": [10]}], "tasks": [{"id": "t", "demand": [3], "count": 5}, {"id": "u", "demand": [4], "count": 1}]}`, 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, err := DecodeInstance(strings.NewReader(tc.json))
			if err != nil {
				t.Fatal(err)
			}
			for _, method := range Methods() {
				r, err := Solve(t.Context(), in, method, Options{})
				if err != nil {
					t.Fatalf("%s: %v", method, err)
				}
				checkFeasible(t, in, r)
				if method == MethodExact && (!r.Optimal || r.Objective != tc.objective) {
					t.Errorf("exact: objective %v optimal %v, want %v proven", r.Objective, r.Optimal, tc.objective)
				}
				var ids []string
				for _, u := range r.Unplaced {
					ids = append(ids, u.Task)
					if u.Reason == "" || u.Count <= 0 {
						t.Errorf("%s: unplaced %+v without reason or count", method, u)
					}
				}
				if strings.Join(ids, ",") != strings.Join(tc.unplaced, ",") {
					t.Errorf("%s: unplaced %v, want %v", method, ids, tc.unplaced)
				}
				if _, err := json.Marshal(r); err != nil {
					t.Errorf("%s: result does not encode: %v", method, err)
				}
			}
		})
	}
}

func FuzzDecodeInstance(f *testing.F) {
	f.Add(`{"nodes": [{"id": "a", "capacity": [4, 0]}], "tasks": [{"id": "t", "demand": [0, 0], "count": 3}, {"id": "u", "demand": [5, 1], "count": 0}]}`)
	f.Add(validJSON)
	f.Add(`{"nodes": [{"id": "a", "capacity": [6, 6]}, {"id": "b", "capacity": [3, 3]}], "tasks": [{"id": "big", "demand": [5, 5], "count": 1}, {"id": "small", "demand": [3, 3], "count": 2}]}`)
	f.Add(`{"nodes": [], "tasks": [], "extra": 1}`)
	f.Add(`{"weights": [0.5], "nodes": [{"id": "a", "capacity": [7]}], "tasks": [{"id": "t", "demand": [2], "count": 3}]}`)
	f.Add(`{"resource_names": ["memory_mb", "vcores"], "nodes": [{"id": "a", "capacity": [8192, 8]}], "tasks": [{"id": "t", "demand": [1024, 1], "count": 9}]}`)
	f.Add(`{"resource_names": ["m", "m"], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`)
	f.Add(`[]`)
	f.Add(`{"nodes": [{"id": "a", "capacity": [1e3]}], "tasks": null}`)
	f.Fuzz(func(t *testing.T, data string) {
		in, err := DecodeInstance(strings.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalidInstance) {
				t.Fatalf("error %v does not wrap ErrInvalidInstance", err)
			}
			return
		}
		// a decoded instance re-encodes to an equivalent instance
		b, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		again, err := DecodeInstance(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		b2, _ := json.Marshal(again)
		if !bytes.Equal(b, b2) {
			t.Fatalf("round trip changed %s into %s", b, b2)
		}
		// small instances solve without panicking: the cheap heuristic
		// and (tiny ones) the exact method within a short limit
		if len(in.Nodes)*len(in.Tasks) <= 64 {
			r, err := FFDDP(t.Context(), in, Options{NoLP: true})
			if err != nil {
				t.Fatal(err)
			}
			checkFeasible(t, in, r)
		}
		if len(in.Nodes)*len(in.Tasks) <= 12 {
			r, err := Exact(t.Context(), in, Options{TimeLimit: 200 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			checkFeasible(t, in, r)
			if r.UpperBound < r.Objective {
				t.Fatalf("bound %v below the objective %v", r.UpperBound, r.Objective)
			}
		}
	})
}

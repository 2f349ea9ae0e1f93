package solver

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const validJSON = `{"weights": [1, 1],
 "nodes": [{"id": "n1", "capacity": [8192, 8]}, {"id": "n2", "capacity": [4096, 4]}],
 "tasks": [{"id": "job1-map", "demand": [1024, 2], "count": 52}]}`

func TestDecodeInstanceErrors(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string // substrings of the error
	}{
		{"unknown top-level field", `{"nodes": [], "tasks": [], "extra": 1}`, []string{`unknown field "extra"`}},
		{"unknown nested field", `{"nodes": [{"id": "a", "capacity": [1], "cpu": 2}], "tasks": []}`, []string{`unknown field "cpu"`}},
		{"wrong type", `{"nodes": [{"id": "a", "capacity": ["x"]}], "tasks": []}`, []string{"nodes.capacity"}},
		{"fractional count", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1.5}]}`, []string{"tasks.count"}},
		{"trailing data", validJSON + ` {}`, []string{"trailing data"}},
		{"no nodes", `{"nodes": [], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes", "at least one node"}},
		{"no tasks", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": []}`, []string{"tasks", "at least one task type"}},
		{"zero capacity", `{"nodes": [{"id": "a", "capacity": [4, 0]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{"nodes[0].capacity[1] = 0", "positive"}},
		{"negative demand", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [-1], "count": 1}]}`, []string{"tasks[0].demand[0] = -1"}},
		{"zero count", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 0}]}`, []string{"tasks[0].count = 0"}},
		{"zero weight", `{"weights": [0], "nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"weights[0] = 0"}},
		{"dimension mismatch", `{"nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"tasks[0].demand", "want k = 2"}},
		{"weights mismatch", `{"weights": [1], "nodes": [{"id": "a", "capacity": [4, 4]}], "tasks": [{"id": "t", "demand": [1, 1], "count": 1}]}`, []string{"nodes[0].capacity", "want k = 1"}},
		{"duplicate node", `{"nodes": [{"id": "a", "capacity": [4]}, {"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes[1].id", "duplicate"}},
		{"duplicate task", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}, {"id": "t", "demand": [2], "count": 1}]}`, []string{"tasks[1].id", "duplicate"}},
		{"empty id", `{"nodes": [{"id": "", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes[0].id"}},
		{"infeasible demand", `{"nodes": [{"id": "a", "capacity": [4, 4]}, {"id": "b", "capacity": [8, 2]}], "tasks": [{"id": "big", "demand": [5, 3], "count": 1}]}`, []string{"tasks[0].demand", "infeasible demand", `"big"`}},
		{"count limit", `{"nodes": [{"id": "a", "capacity": [4]}], "tasks": [{"id": "t", "demand": [1], "count": 1000001}]}`, []string{"tasks[0].count", "MaxCount"}},
		{"quantity limit", `{"nodes": [{"id": "a", "capacity": [1099511627777]}], "tasks": [{"id": "t", "demand": [1], "count": 1}]}`, []string{"nodes[0].capacity[0]", "MaxQuantity"}},
		{"resource limit", `{"nodes": [{"id": "a", "capacity": [1,1,1,1,1,1,1,1,1]}], "tasks": [{"id": "t", "demand": [1,1,1,1,1,1,1,1,1], "count": 1}]}`, []string{"MaxResources"}},
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

func FuzzDecodeInstance(f *testing.F) {
	f.Add(validJSON)
	f.Add(`{"nodes": [{"id": "a", "capacity": [6, 6]}, {"id": "b", "capacity": [3, 3]}], "tasks": [{"id": "big", "demand": [5, 5], "count": 1}, {"id": "small", "demand": [3, 3], "count": 2}]}`)
	f.Add(`{"nodes": [], "tasks": [], "extra": 1}`)
	f.Add(`{"weights": [0.5], "nodes": [{"id": "a", "capacity": [7]}], "tasks": [{"id": "t", "demand": [2], "count": 3}]}`)
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
		// small instances solve with the cheap heuristic without panicking
		if len(in.Nodes)*len(in.Tasks) <= 64 {
			r, err := FFDDP(t.Context(), in, Options{NoLP: true})
			if err != nil {
				t.Fatal(err)
			}
			checkFeasible(t, in, r)
		}
	})
}

package server

import (
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/optd/optd/models"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/thresholds"
)

// pythonWithGRPC returns a Python 3 that can import grpc and protobuf
// (Debian's python3-grpcio and python3-protobuf), or why there is none.
func pythonWithGRPC() (string, string) {
	if _, err := exec.LookPath("protoc"); err != nil {
		return "", "protoc is not on PATH (Debian package protobuf-compiler; scripts/setup.sh --test installs it)"
	}
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(py, "-c", "import grpc, google.protobuf").Run() == nil {
			return py, ""
		}
	}
	return "", "no python3 with grpc and protobuf (Debian packages python3-grpcio and python3-protobuf; scripts/setup.sh --test installs them)"
}

// TestPythonClient runs the README's Python client against a live server
// and checks its placement against the cluster's state and its heartbeat's
// actions; it runs twice against the same server (it is re-runnable) and
// leaves no cluster behind.
func TestPythonClient(t *testing.T) {
	py, why := pythonWithGRPC()
	if py == "" {
		t.Skip(why)
	}
	ts := startServer(t, "", Options{}, nil)
	for run := range 2 {
		out, err := exec.Command(py, "../examples/python/optd_client.py", "--addr", ts.addr).Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("client run %d: %v\n%s", run, err, ee.Stderr)
			}
			t.Fatal(err)
		}
		checkPythonOutput(t, out)
	}
	if l, err := ts.cluster.ListClusters(t.Context(), &optdv1.ListClustersRequest{}); err != nil || len(l.GetClusters()) != 0 {
		t.Errorf("after the client: clusters %v, %v; want none left", l, err)
	}
}

// checkPythonOutput checks what the Python client printed.
func checkPythonOutput(t *testing.T, out []byte) {
	t.Helper()
	var got struct {
		Policy string `json:"policy"`
		Slots  []struct {
			FetchCost float64 `json:"fetch_cost"`
		} `json:"slots"`
		FetchCost  float64 `json:"fetch_cost"`
		FreedSlots int     `json:"freed_slots"`
		Heartbeat  []struct {
			Kind     string `json:"kind"`
			TaskType string `json:"task_type"`
			Locality string `json:"locality"`
			Reason   string `json:"reason"`
		} `json:"heartbeat"`
		Thresholds [][]float64 `json:"thresholds"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	// The client's job has R = 3 reducers and X = 6144 MB, so Y = 2048 and
	// the fetch cost is Y·ΣH over the three slots it was given.
	var sumH float64
	for _, s := range got.Slots {
		sumH += s.FetchCost
	}
	if got.Policy != "receding-horizon" || len(got.Slots) != 3 || got.FreedSlots != 3 || got.FetchCost != 2048*sumH {
		t.Errorf("client printed %s", out)
	}
	// Node n0 (8 GB, 4 vcores) holds the input of 20 of the 40 maps: HaSTE-A
	// starts 4 maps there, node-local.
	if len(got.Heartbeat) != 4 {
		t.Fatalf("heartbeat of n0: %d actions, want 4 map starts: %s", len(got.Heartbeat), out)
	}
	for _, a := range got.Heartbeat {
		if a.Kind != "start" || a.TaskType != "map" || a.Locality != "node_local" || a.Reason == "" {
			t.Errorf("heartbeat action %+v, want a node-local map start with its reason", a)
		}
	}
	// The typed workload: the table of examples/workload.json for K = 3,
	// as package thresholds builds it (the second method).
	data, err := os.ReadFile("../examples/workload.json")
	if err != nil {
		t.Fatal(err)
	}
	w, err := models.DecodeWorkload(data, "")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := thresholds.BuildTable(t.Context(), w, 3, thresholds.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Thresholds) != len(tab.Stages) {
		t.Fatalf("thresholds: %d stages, want %d", len(got.Thresholds), len(tab.Stages))
	}
	for i, q := range tab.Stages {
		if !slices.Equal(got.Thresholds[i], q) {
			t.Errorf("thresholds stage %d: %v, want %v", i+1, got.Thresholds[i], q)
		}
	}
}

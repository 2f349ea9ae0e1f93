package server

import (
	"encoding/json"
	"io"
	"os"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
)

// TestSimulateCluster: over built-in scenarios and policy families, the
// RPC's progress counts up to every job and its result is the JSON of the
// same run made in process (the path `optd simulate` takes); bad requests
// are InvalidArgument naming the field.
func TestSimulateCluster(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	cases := []struct {
		builtin, policy string
		seed            uint64
	}{{"haste-table2", "haste-a", 0}, {"stealing-stragglers-2", "fair+late", 3}, {"dynamicmr-batch-5", "pi-dhsa+sepb", 2}}
	if testing.Short() {
		cases = cases[:1]
	}
	for _, tc := range cases {
		st, err := ts.optimize.SimulateCluster(ctx, &optdv1.SimulateClusterRequest{Builtin: tc.builtin, Policy: tc.policy, Seed: tc.seed})
		if err != nil {
			t.Fatal(err)
		}
		var result string
		last, total := -1, 0
		for {
			r, err := st.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s/%s: %v", tc.builtin, tc.policy, err)
			}
			if p := r.GetProgress(); p != nil {
				if int(p.GetDone()) <= last || p.GetDone() > p.GetTotal() {
					t.Fatalf("%s/%s: progress %v after %d", tc.builtin, tc.policy, p, last)
				}
				last, total = int(p.GetDone()), int(p.GetTotal())
			}
			result += r.GetResultJson()
		}
		sc, err := sim.BuiltinCluster(tc.builtin)
		if err != nil {
			t.Fatal(err)
		}
		if last != total || total != len(sc.Jobs) {
			t.Errorf("%s/%s: progress ended at %d of %d, want %d jobs", tc.builtin, tc.policy, last, total, len(sc.Jobs))
		}
		seed := tc.seed
		if seed == 0 {
			seed = defaultClusterSeed
		}
		pipe, err := policy.NewPipeline(tc.policy, policy.HeartbeatConfig{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		res, err := sim.RunCluster(ctx, sc, pipe, sim.ClusterOptions{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(clusterOutput{Scenario: sc.Name, Policy: tc.policy, Seed: seed, ClusterResult: res})
		if result != string(want) {
			t.Errorf("%s/%s: result\n%s\nwant\n%s", tc.builtin, tc.policy, result, want)
		}
	}
	for _, bad := range []struct {
		req  *optdv1.SimulateClusterRequest
		want string
	}{
		{&optdv1.SimulateClusterRequest{Policy: "fifo"}, "give exactly one of scenario and builtin"},
		{&optdv1.SimulateClusterRequest{Builtin: "haste-table2", ScenarioJson: "{}", Policy: "fifo"}, "exactly one"},
		{&optdv1.SimulateClusterRequest{Builtin: "nope", Policy: "fifo"}, "builtin = nope"},
		{&optdv1.SimulateClusterRequest{Builtin: "haste-table2", Policy: "magic"}, "policy = magic"},
		{&optdv1.SimulateClusterRequest{ScenarioJson: `{"jobs": [{"file": "/etc/passwd"}]}`, Policy: "fifo"}, "file"},
	} {
		st, err := ts.optimize.SimulateCluster(ctx, bad.req)
		if err == nil {
			_, err = st.Recv()
		}
		wantCode(t, err, codes.InvalidArgument, bad.want)
	}
}

// TestSimulatePlacementIsSimulate: the new name answers as the old one.
func TestSimulatePlacementIsSimulate(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	data, err := os.ReadFile("../examples/placement-scenario.json")
	if err != nil {
		t.Fatal(err)
	}
	req := &optdv1.SimulateRequest{ScenarioJson: string(data), Policies: []string{"greedy", "receding-horizon"}}
	a, err := ts.optimize.Simulate(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ts.optimize.SimulatePlacement(ctxT(t), req)
	if err != nil {
		t.Fatal(err)
	}
	a.ElapsedMs, b.ElapsedMs = 0, 0
	if !proto.Equal(a, b) {
		t.Errorf("SimulatePlacement = %v, Simulate = %v", b, a)
	}
}

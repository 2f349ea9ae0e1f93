package server

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/solver"
)

// typedFormats: each input format, a new empty message of its typed form,
// and the repository's files of that format (the example and the test
// inputs docs/formats_test.go checks against the format's schema).
var typedFormats = map[string]struct {
	message func() proto.Message
	files   []string
}{
	"workload": {func() proto.Message { return &optdv1.Workload{} },
		[]string{"cmd/thresholds/testdata/*.json", "models/testdata/workload/*.json"}},
	"ita-instance": {func() proto.Message { return &optdv1.ItaInstance{} },
		[]string{"cmd/ita/testdata/*.json"}},
	"placement-scenario": {func() proto.Message { return &optdv1.PlacementScenario{} },
		[]string{"cmd/bound/testdata/*.json", "cmd/search/testdata/*.json", "search/testdata/*.json", "sim/testdata/scenarios/*.json"}},
	"cluster-scenario": {func() proto.Message { return &optdv1.ClusterScenario{} },
		[]string{"cmd/simulate/testdata/*.json", "sim/testdata/*.json"}},
}

// formatFiles lists the valid files of a format, with what a file that
// names another file (a trace, empirical samples) is: not representable,
// since the server reads no files.
func formatFiles(t *testing.T, name string) (paths []string) {
	t.Helper()
	paths = []string{filepath.Join("..", "examples", name+".json")}
	for _, g := range typedFormats[name].files {
		m, err := filepath.Glob(filepath.Join("..", g))
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: glob %s matches nothing", name, g)
		}
		for _, p := range m {
			base := filepath.Base(p)
			if strings.HasPrefix(base, "bad") || strings.HasPrefix(base, "unknown") || strings.Contains(base, "golden") {
				continue
			}
			paths = append(paths, p)
		}
	}
	return paths
}

// equalJSON reports whether two JSON documents hold the same values, a null
// member or an empty list being the same as an absent one (a message has
// no other way to write them) and numbers compared as float64.
func equalJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	return reflect.DeepEqual(normJSON(t, a, false), normJSON(t, b, false))
}

// normJSON decodes data without its null members and empty lists, and
// with zeros also without its members equal to 0, false or "" (which a
// result message, without presence, does not tell from absent).
func normJSON(t *testing.T, data []byte, zeros bool) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	return dropEmpty(v, zeros)
}

func dropEmpty(v any, zeros bool) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			l, isList := x.([]any)
			if x == nil || isList && len(l) == 0 || zeros && (x == 0.0 || x == false || x == "") {
				delete(t, k)
			} else {
				t[k] = dropEmpty(x, zeros)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = dropEmpty(x, zeros)
		}
	}
	return v
}

// TestTypedFormatsRoundTrip: every example and valid test input of each
// format reads into its message (protojson, unknown fields refused: the
// message has every field of the format) and the message writes back the
// same JSON; the CLI's decoder then accepts the written JSON as it did
// the file. Files that name other files are counted and must be few.
func TestTypedFormatsRoundTrip(t *testing.T) {
	decoders := map[string]func([]byte) error{
		"workload":           func(b []byte) error { _, err := decodeWorkload(string(b)); return err },
		"ita-instance":       func(b []byte) error { _, err := solver.DecodeInstance(bytes.NewReader(b)); return err },
		"placement-scenario": func(b []byte) error { _, err := sim0().decodeScenario(string(b)); return err },
		"cluster-scenario":   func(b []byte) error { _, err := sim0().decodeClusterScenario("scenario", string(b), ""); return err },
	}
	for name, f := range typedFormats {
		checked, named := 0, 0
		for _, path := range formatFiles(t, name) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if rejectFileRefs("x", data) != nil || bytes.Contains(data, []byte(`"trace"`)) {
				named++
				continue
			}
			m := f.message()
			if err := protojson.Unmarshal(data, m); err != nil {
				t.Errorf("%s: not a %T: %v", path, m, err)
				continue
			}
			out, err := formatJSON(m)
			if err != nil {
				t.Fatal(err)
			}
			if !equalJSON(t, data, out) {
				t.Errorf("%s: written back as\n%s", path, out)
			}
			if err := decoders[name](out); err != nil {
				t.Errorf("%s: the decoder refuses the message's JSON: %v", path, err)
			}
			checked++
		}
		if checked == 0 || named > checked {
			t.Errorf("%s: %d files checked, %d name a file", name, checked, named)
		}
		t.Logf("%s: %d files round-trip, %d name a file (not offered over gRPC)", name, checked, named)
	}
}

func sim0() *OptimizeService { return NewOptimizeService(Limits{}, nil) }

// typedOf reads a JSON file into its typed message.
func typedOf[M proto.Message](t *testing.T, path string, m M) (M, string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := protojson.Unmarshal(data, m); err != nil {
		t.Fatal(err)
	}
	return m, string(data)
}

// recvAll drains a server stream and returns its messages.
func recvAll[T any](t *testing.T, st grpc.ServerStreamingClient[T]) []*T {
	t.Helper()
	var out []*T
	for {
		m, err := st.Recv()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
}

// lastTwo returns the typed result and the result_json of a stream's last
// two messages, which must be those, in that order.
func lastTwo[T any, R proto.Message](t *testing.T, what string, msgs []*T, result func(*T) R, text func(*T) string) (R, string) {
	t.Helper()
	n := len(msgs)
	if n < 2 || !result(msgs[n-2]).ProtoReflect().IsValid() || text(msgs[n-1]) == "" {
		t.Fatalf("%s: the last two events are not the result and result_json: %v", what, msgs)
	}
	return result(msgs[n-2]), text(msgs[n-1])
}

// checkResult: a typed result written back is the result_json beside it
// (nulls and zeros being absent), so the message holds every field the CLI
// prints, with its value.
func checkResult(t *testing.T, what string, typed proto.Message, resultJSON string) {
	t.Helper()
	out, err := formatJSON(typed)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normJSON(t, []byte(resultJSON), true), normJSON(t, out, true)) {
		t.Errorf("%s: typed result\n%s\nresult_json\n%s", what, out, resultJSON)
	}
}

// TestTypedAndJSONRequestsAgree: the same input given typed and as JSON
// text gets the same answer from every OptimizeService method that takes
// one, and each typed result is its result_json.
func TestTypedAndJSONRequestsAgree(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)

	wl, wlJSON := typedOf(t, "../examples/workload.json", &optdv1.Workload{})
	a, err := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{Workload: wl, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{WorkloadJson: wlJSON, Jobs: 3})
	if err != nil {
		t.Fatal(err)
	}
	a.ElapsedMs, b.ElapsedMs = 0, 0
	if !proto.Equal(a, b) {
		t.Errorf("ComputeThresholds: typed %v, JSON %v", a, b)
	}

	// The instance files, and one with a task that fits no node (the
	// result's unplaced).
	instances := map[string]*optdv1.ItaInstance{"unplaceable": {
		Nodes: []*optdv1.ItaNode{{Id: proto.String("n"), Capacity: []int64{4, 2}}},
		Tasks: []*optdv1.ItaTask{{Id: proto.String("huge"), Demand: []int64{8, 1}, Count: proto.Int32(1)},
			{Id: proto.String("small"), Demand: []int64{1, 1}, Count: proto.Int32(3)}}}}
	for _, path := range formatFiles(t, "ita-instance") {
		instances[path], _ = typedOf(t, path, &optdv1.ItaInstance{})
	}
	for path, in := range instances {
		inJSON, err := formatJSON(in)
		if err != nil {
			t.Fatal(err)
		}
		a, err := ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{Instance: in, Method: "per-node"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{InstanceJson: string(inJSON), Method: "per-node"})
		if err != nil {
			t.Fatal(err)
		}
		checkResult(t, path, a.GetResult(), a.GetResultJson())
		for _, r := range []*optdv1.SolveInitialAssignmentResponse{a, b} {
			r.ElapsedMs, r.Result.ElapsedMs, r.ResultJson = 0, 0, ""
		}
		if !proto.Equal(a, b) {
			t.Errorf("%s: typed %v, JSON %v", path, a, b)
		}
		if path == "unplaceable" && len(a.GetResult().GetUnplaced()) != 1 {
			t.Errorf("unplaceable: unplaced %v, want the huge task", a.GetResult().GetUnplaced())
		}
	}

	// A short placement scenario: Simulate and Bound.
	sc, _ := typedOf(t, "../cmd/bound/testdata/tiny.json", &optdv1.PlacementScenario{})
	sc.Jobs, sc.WarmupJobs, sc.Replications = proto.Int32(300), proto.Int32(30), proto.Int32(2)
	scJSON, err := formatJSON(sc)
	if err != nil {
		t.Fatal(err)
	}
	sa, err := ts.optimize.SimulatePlacement(ctx, &optdv1.SimulateRequest{Scenario: sc})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := ts.optimize.SimulatePlacement(ctx, &optdv1.SimulateRequest{ScenarioJson: string(scJSON)})
	if err != nil {
		t.Fatal(err)
	}
	sa.ElapsedMs, sb.ElapsedMs = 0, 0
	if !proto.Equal(sa, sb) {
		t.Errorf("SimulatePlacement: typed %v, JSON %v", sa, sb)
	}
	bound := func(req *optdv1.BoundRequest) (*optdv1.BoundResult, string) {
		st, err := ts.optimize.Bound(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return lastTwo(t, "Bound", recvAll(t, st), (*optdv1.BoundResponse).GetResult, (*optdv1.BoundResponse).GetResultJson)
	}
	ba, baJSON := bound(&optdv1.BoundRequest{Scenario: sc, Policies: []string{"greedy", "receding-horizon"}})
	bb, bbJSON := bound(&optdv1.BoundRequest{ScenarioJson: string(scJSON), Policies: []string{"greedy", "receding-horizon"}})
	checkResult(t, "Bound", ba, baJSON)
	if !proto.Equal(ba, bb) || baJSON != bbJSON {
		t.Errorf("Bound: typed %v, JSON %v", ba, bb)
	}

	simulate := func(req *optdv1.SimulateClusterRequest) (*optdv1.ClusterSimResult, string) {
		st, err := ts.optimize.SimulateCluster(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return lastTwo(t, "SimulateCluster", recvAll(t, st), (*optdv1.SimulateClusterResponse).GetResult, (*optdv1.SimulateClusterResponse).GetResultJson)
	}
	// The example with vetoes (explain), with the shuffle network on (the
	// result's shuffle), and early reducers (preempted reducers).
	example, _ := typedOf(t, "../examples/cluster-scenario.json", &optdv1.ClusterScenario{})
	networked := proto.Clone(example).(*optdv1.ClusterScenario)
	networked.Network = &optdv1.ScenarioNetwork{Oversubscription: proto.Float64(4)}
	early, _ := typedOf(t, "../cmd/simulate/testdata/early-reducers.json", &optdv1.ClusterScenario{})
	covered := map[string]bool{}
	for _, c := range []struct {
		name   string
		sc     *optdv1.ClusterScenario
		policy string
	}{{"example", example, "fair+delay-scheduling+late"}, {"network", networked, "fair+late"}, {"early-reducers", early, "fifo"}} {
		text, err := formatJSON(c.sc)
		if err != nil {
			t.Fatal(err)
		}
		a, aJSON := simulate(&optdv1.SimulateClusterRequest{Scenario: c.sc, Policy: c.policy, Explain: true})
		b, bJSON := simulate(&optdv1.SimulateClusterRequest{ScenarioJson: string(text), Policy: c.policy, Explain: true})
		checkResult(t, "SimulateCluster "+c.name, a, aJSON)
		if !proto.Equal(a, b) || aJSON != bJSON {
			t.Errorf("SimulateCluster %s: typed %v, JSON %v", c.name, a, b)
		}
		covered[c.name] = len(a.GetVetoes()) > 0 || a.GetShuffle() != nil || a.GetPreemptedReducers() > 0
	}
	// Each case fills the optional part of the result it is there for.
	for name, ok := range covered {
		if !ok {
			t.Errorf("SimulateCluster %s: no vetoes, shuffle or preempted reducers to compare", name)
		}
	}
}

// TestTypedErrorsAreTheJSONErrors: a bad typed input is refused with the
// message the same JSON gets, naming the same field path.
func TestTypedErrorsAreTheJSONErrors(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	bad := []*optdv1.Workload{
		{Data: &optdv1.Law{Kind: proto.String("uniform"), Min: proto.Float64(5), Max: proto.Float64(1)},
			Reduces: &optdv1.Law{Kind: proto.String("uniform-int"), Min: proto.Float64(1), Max: proto.Float64(2)}},
		{Data: &optdv1.Law{Kind: proto.String("exponential"), Mean: proto.Float64(-1)},
			Reduces: &optdv1.Law{Kind: proto.String("discrete"), Values: []float64{1.5}, Probs: []float64{1}}},
		{Data: &optdv1.Law{Kind: proto.String("magic")}},
		{Joint: []*optdv1.JointPoint{{Data: proto.Float64(1), Reduces: proto.Int32(0), Prob: proto.Float64(1)}}},
		{},
	}
	for _, w := range bad {
		text, _ := formatJSON(w)
		_, typedErr := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{Workload: w, Jobs: 2})
		_, jsonErr := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{WorkloadJson: string(text), Jobs: 2})
		if typedErr == nil || typedErr.Error() != jsonErr.Error() {
			t.Errorf("%s: typed %v, JSON %v", text, typedErr, jsonErr)
		}
	}
	_, err := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{Workload: bad[0], WorkloadJson: "{}", Jobs: 2})
	wantCode(t, err, codes.InvalidArgument, "give workload or workload_json, not both")
	_, err = ts.optimize.SolveInitialAssignment(ctx, &optdv1.SolveInitialAssignmentRequest{
		Instance: &optdv1.ItaInstance{Nodes: []*optdv1.ItaNode{{Id: proto.String("n"), Capacity: []int64{-1}}},
			Tasks: []*optdv1.ItaTask{{Id: proto.String("t"), Demand: []int64{1}, Count: proto.Int32(1)}}}})
	wantCode(t, err, codes.InvalidArgument, "nodes[0].capacity")
}

// FuzzTypedInputs feeds arbitrary typed inputs (bytes decoded as one of
// the four messages) through the server's path: written as JSON, decoded
// by the CLI's decoder. It never panics, and every refusal is a validation
// error in the user's terms (no Go type or package name).
func FuzzTypedInputs(f *testing.F) {
	names := []string{"workload", "ita-instance", "placement-scenario", "cluster-scenario"}
	for k, name := range names {
		data, err := os.ReadFile(filepath.Join("..", "examples", name+".json"))
		if err != nil {
			f.Fatal(err)
		}
		m := typedFormats[name].message()
		if err := protojson.Unmarshal(data, m); err != nil {
			f.Fatal(err)
		}
		b, _ := proto.Marshal(m)
		f.Add(append([]byte{byte(k)}, b...))
	}
	// The cases as seeds: a huge data law, negative costs.
	for k, m := range []proto.Message{
		&optdv1.Workload{Data: &optdv1.Law{Kind: proto.String("uniform"), Min: proto.Float64(0), Max: proto.Float64(1.7e308)},
			Reduces: &optdv1.Law{Kind: proto.String("uniform-int"), Min: proto.Float64(1), Max: proto.Float64(2)}},
		&optdv1.ItaInstance{Nodes: []*optdv1.ItaNode{{Id: proto.String("n"), Capacity: []int64{-5}}}},
		&optdv1.PlacementScenario{Slots: &optdv1.ScenarioSlots{Costs: []float64{-1}}, MaxJobsInService: proto.Int32(1 << 30)},
		&optdv1.ClusterScenario{Cluster: &optdv1.ScenarioCluster{Nodes: []*optdv1.ScenarioNode{{Id: proto.String("n")}}},
			Jobs: []*optdv1.ScenarioJob{{Id: proto.String("j"), Maps: proto.Int32(-1), MapWork: &optdv1.Law{Kind: proto.String("pareto")}}}},
	} {
		b, _ := proto.Marshal(m)
		f.Add(append([]byte{byte(k)}, b...))
	}
	s := NewOptimizeService(Limits{}, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		name := names[int(data[0])%len(names)]
		m := typedFormats[name].message()
		if proto.Unmarshal(data[1:], m) != nil {
			return
		}
		text, err := formatJSON(m)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		switch name {
		case "workload":
			_, err = decodeWorkload(string(text))
		case "ita-instance":
			_, err = solver.DecodeInstance(bytes.NewReader(text))
		case "placement-scenario":
			_, err = s.decodeScenario(string(text))
		case "cluster-scenario":
			_, err = s.decodeClusterScenario("scenario", string(text), "")
		}
		if err == nil {
			return
		}
		if code := codeOf(t.Context(), err); code != codes.InvalidArgument {
			t.Fatalf("%s %s: %v is %v, not a validation error", name, text, err, code)
		}
		for _, leak := range []string{"optdv1", "Go struct", "Go value", "main.", "sim.", "models.", "solver."} {
			if strings.Contains(err.Error(), leak) {
				t.Fatalf("%s %s: error %q names %q", name, text, err, leak)
			}
		}
	})
}

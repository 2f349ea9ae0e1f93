package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// gatewayPost posts body to the gateway's path with the Authorization
// header auth ("" : none).
func gatewayPost(t *testing.T, ts *testServer, path, auth, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+ts.gateway+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// post calls METHOD of ClusterService through the gateway.
func post(t *testing.T, ts *testServer, method, auth, body string) (int, map[string]any) {
	t.Helper()
	resp := gatewayPost(t, ts, "/optd.v1.ClusterService/"+method, auth, body)
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: %q is not JSON: %v", method, data, err)
	}
	return resp.StatusCode, out
}

// TestGateway: the HTTP/JSON gateway answers as the gRPC API does (the
// same state, seen over gRPC), with the same token and the same error
// codes mapped to HTTP, and serves its OpenAPI document.
func TestGateway(t *testing.T) {
	ts := startServer(t, "", Options{Token: "tok", GatewayListen: "127.0.0.1:0"}, nil)
	reg := `{"cluster_id":"g","nodes":[{"id":"n1","rack":"r1","reduce_slots":2},{"id":"n2","rack":"r2","reduce_slots":1}],"policy":{"name":"greedy"}}`
	if code, out := post(t, ts, "RegisterCluster", "", reg); code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d %v", code, out)
	}
	if code, out := post(t, ts, "RegisterCluster", "bearer tok", reg); code != http.StatusOK || out["state"] == nil {
		t.Fatalf("RegisterCluster: %d %v", code, out)
	}
	if code, out := post(t, ts, "SubmitJob", "Bearer tok", `{"cluster_id":"g","job_id":"j","reduces":2}`); code != http.StatusOK {
		t.Fatalf("SubmitJob: %d %v", code, out)
	}
	code, placed := post(t, ts, "PlaceReduces", "Bearer tok", `{"cluster_id":"g","job_id":"j","data_mb":100}`)
	if code != http.StatusOK {
		t.Fatalf("PlaceReduces: %d %v", code, placed)
	}
	// The same placement over gRPC: the state holds the slots the gateway
	// answered.
	ctx := withBearer(ctxT(t), "tok")
	st, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "g"})
	if err != nil {
		t.Fatal(err)
	}
	slots, _ := placed["slots"].([]any)
	if len(slots) != 2 || len(st.GetState().GetJobs()) != 1 || len(st.GetState().GetJobs()[0].GetSlots()) != 2 {
		t.Fatalf("gateway placed %v; state %v", placed, st.GetState())
	}
	// Errors keep their code: InvalidArgument is 400 and names the field.
	code, out := post(t, ts, "PlaceReduces", "Bearer tok", `{"cluster_id":"g","job_id":"j","data_mb":-1}`)
	if code != http.StatusBadRequest || !strings.Contains(out["message"].(string), "data_mb = -1") {
		t.Errorf("bad data_mb: %d %v", code, out)
	}
	if code, out := post(t, ts, "SubmitJob", "Bearer tok", `{"cluster_id":"nope","job_id":"j","reduces":1}`); code != http.StatusNotFound {
		t.Errorf("unknown cluster: %d %v", code, out)
	}
	// A misspelled field is refused with its name, not dropped (the job
	// would otherwise be submitted with 0 reduces).
	code, out = post(t, ts, "SubmitJob", "Bearer tok", `{"cluster_id":"g","job_id":"k","reduce":3}`)
	if msg, _ := out["message"].(string); code != http.StatusBadRequest || !strings.Contains(msg, `unknown field "reduce"`) || strings.Contains(msg, "proto:") {
		t.Errorf("misspelled field: %d %v", code, out)
	}
	// Answers use the proto's names, as the JSON formats and the command
	// line do (requests take either spelling).
	if code, out := post(t, ts, "GetClusterState", "Bearer tok", `{"clusterId":"g"}`); code != http.StatusOK || out["state"].(map[string]any)["jobs"].([]any)[0].(map[string]any)["job_id"] != "j" {
		t.Errorf("GetClusterState: %d %v, want the state's job under job_id", code, out)
	}
	resp, err := http.Get("http://" + ts.gateway + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(doc, optdv1.OpenAPI) || !bytes.Contains(doc, []byte("/optd.v1.ClusterService/PlaceReduces")) {
		t.Errorf("/openapi.json: %d, %d bytes", resp.StatusCode, len(doc))
	}
}

// TestJavaClient runs examples/java/OptdClient.java (JDK only) against the
// gateway of a live server with a token, twice (it cleans up after
// itself), and checks each answer it printed.
func TestJavaClient(t *testing.T) {
	java, err := exec.LookPath("java")
	if err != nil {
		t.Skip("no java on PATH (Debian package default-jdk-headless; scripts/setup.sh --test installs it)")
	}
	ts := startServer(t, "", Options{Token: "tok", GatewayListen: "127.0.0.1:0"}, nil)
	for run := range 2 {
		cmd := exec.Command(java, "../examples/java/OptdClient.java", "http://"+ts.gateway, "tok")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", run, err, stderr.String())
		}
		got := map[string]map[string]any{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			name, body, _ := strings.Cut(sc.Text(), " ")
			var v map[string]any
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatalf("run %d: line %q: %v", run, sc.Text(), err)
			}
			got[name] = v
		}
		actions, _ := got["heartbeat"]["actions"].([]any)
		slots, _ := got["place"]["slots"].([]any)
		// FIFO on n1 (4 vcores): both maps start, first the one whose input
		// is on n1 (node-local), then the other (its input is on n2, in
		// another rack).
		if len(actions) != 2 || actions[0].(map[string]any)["locality"] != "node_local" || actions[1].(map[string]any)["locality"] != "off_rack" {
			t.Errorf("run %d: heartbeat of n1 = %v, want a node-local then an off-rack map start", run, got["heartbeat"])
		}
		for _, a := range actions {
			if a.(map[string]any)["kind"] != "start" || a.(map[string]any)["task_type"] != "map" {
				t.Errorf("run %d: action %v, want a map start", run, a)
			}
		}
		if len(slots) != 1 || got["finished"]["freed_slots"] != float64(1) || got["delete"]["existed"] != true {
			t.Errorf("run %d: printed %s", run, out)
		}
	}
	l, err := ts.cluster.ListClusters(withBearer(ctxT(t), "tok"), &optdv1.ListClustersRequest{})
	if err != nil || len(l.GetClusters()) != 0 {
		t.Errorf("after the client: %v, %v; want no cluster", l, err)
	}
}

// withBearer adds the bearer token to a call's metadata.
func withBearer(ctx context.Context, tok string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+tok)
}

// postStream calls a server-streaming METHOD of OptimizeService through the
// gateway and returns the HTTP status and the newline-delimited JSON lines.
func postStream(t *testing.T, ts *testServer, method, auth, body string) (int, []map[string]any) {
	t.Helper()
	resp := gatewayPost(t, ts, "/optd.v1.OptimizeService/"+method, auth, body)
	defer resp.Body.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var v map[string]any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: line %q is not JSON: %v", method, sc.Text(), err)
		}
		lines = append(lines, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, lines
}

// TestGatewayStreams: the streaming methods answer over HTTP as
// newline-delimited JSON, one {"result": …} line per message: the same
// progress and result as over gRPC (the second method), with the token
// required and errors as an {"error": …} line with the code's HTTP status.
func TestGatewayStreams(t *testing.T) {
	ts := startServer(t, "", Options{Token: "tok", GatewayListen: "127.0.0.1:0"}, nil)
	ctx := withBearer(ctxT(t), "tok")

	body := `{"builtin":"haste-table2","policy":"haste-a","seed":2}`
	code, lines := postStream(t, ts, "SimulateCluster", "Bearer tok", body)
	st, err := ts.optimize.SimulateCluster(ctx, &optdv1.SimulateClusterRequest{Builtin: "haste-table2", Policy: "haste-a", Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := recvAll(t, st)
	if code != http.StatusOK || len(lines) != len(want) || len(want) < 3 {
		t.Fatalf("SimulateCluster over HTTP: %d, %d lines; over gRPC %d messages", code, len(lines), len(want))
	}
	for i, line := range lines {
		data, _ := json.Marshal(line["result"])
		got := &optdv1.SimulateClusterResponse{}
		if err := protojson.Unmarshal(data, got); err != nil {
			t.Fatalf("line %d: %v", i, err)
		}
		if !proto.Equal(got, want[i]) {
			t.Errorf("line %d: %v, over gRPC %v", i, got, want[i])
		}
	}

	// A file of the CLI is the typed field's JSON as it is.
	file, err := os.ReadFile("../examples/cluster-scenario.json")
	if err != nil {
		t.Fatal(err)
	}
	code, lines = postStream(t, ts, "SimulateCluster", "Bearer tok", `{"policy":"fair+late","scenario":`+string(file)+`}`)
	typed, _ := typedOf(t, "../examples/cluster-scenario.json", &optdv1.ClusterScenario{})
	st, err = ts.optimize.SimulateCluster(ctx, &optdv1.SimulateClusterRequest{Scenario: typed, Policy: "fair+late"})
	if err != nil {
		t.Fatal(err)
	}
	want = recvAll(t, st)
	if code != http.StatusOK || len(lines) != len(want) {
		t.Fatalf("SimulateCluster of a file over HTTP: %d, %d lines; over gRPC %d messages", code, len(lines), len(want))
	}
	data, _ := json.Marshal(lines[len(lines)-2]["result"])
	got := &optdv1.SimulateClusterResponse{}
	if err := protojson.Unmarshal(data, got); err != nil || !proto.Equal(got, want[len(want)-2]) {
		t.Errorf("SimulateCluster of a file over HTTP: %v (%v), over gRPC %v", got, err, want[len(want)-2])
	}

	code, lines = postStream(t, ts, "Search", "Bearer tok", `{"builtin":"haste-table2","policy":"haste-a","evaluations":4,"replications":1,"validation":-1}`)
	if code != http.StatusOK || len(lines) < 2 {
		t.Fatalf("Search over HTTP: %d %v", code, lines)
	}
	last, _ := lines[len(lines)-1]["result"].(map[string]any)
	if res, _ := last["result"].(map[string]any); res == nil || res["best_policy"] == nil {
		t.Errorf("Search over HTTP: last line %v, want the result", lines[len(lines)-1])
	}
	for _, l := range lines[:len(lines)-1] {
		if p, _ := l["result"].(map[string]any); p["progress"] == nil {
			t.Errorf("Search over HTTP: line %v before the result is not progress", l)
		}
	}

	for _, c := range []struct {
		auth, body string
		code       int
		want       string
	}{
		{"", body, http.StatusUnauthorized, ""},
		{"Bearer tok", `{"policy":"haste-a"}`, http.StatusBadRequest, "give exactly one of scenario and builtin"},
		{"Bearer tok", `{"builtin":"haste-table2","policy":"magic"}`, http.StatusBadRequest, "policy = magic"},
	} {
		code, lines := postStream(t, ts, "SimulateCluster", c.auth, c.body)
		if code != c.code || len(lines) != 1 || lines[0]["error"] == nil {
			t.Errorf("%q: %d %v, want %d and one error line", c.body, code, lines, c.code)
			continue
		}
		if msg, _ := lines[0]["error"].(map[string]any)["message"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%q: error %q, want it to contain %q", c.body, msg, c.want)
		}
	}
}

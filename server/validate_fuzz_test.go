package server

import (
	"errors"
	"math"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// FuzzRegisterCluster feeds arbitrary bytes, decoded as a request, to the
// validator: it never panics, every error is a validation error, and an
// accepted cluster has slots with finite non-negative costs on known nodes.
func FuzzRegisterCluster(f *testing.F) {
	for _, r := range []*optdv1.RegisterClusterRequest{
		costsCluster("c", "greedy", 1, 2, 3),
		{ClusterId: "t", Nodes: []*optdv1.Node{{Id: "a", Rack: "r1", ReduceSlots: 2}, {Id: "b", Rack: "r2", ReduceSlots: 1}},
			Topology: &optdv1.Topology{SameRackHops: 1}},
		{ClusterId: "bad", Nodes: []*optdv1.Node{{Id: "a", ReduceSlots: -1}}},
		hbCluster("h", "haste-a+late"),
	} {
		data, _ := proto.Marshal(r)
		f.Add(data)
	}
	lim := Limits{MaxSlots: 1000}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		var req optdv1.RegisterClusterRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		c, err := clusterFromRequest(&req, lim)
		if err != nil {
			if !errors.Is(err, ErrInvalid) && codeOf(t.Context(), err).String() != "InvalidArgument" {
				t.Fatalf("error %v is not a validation error", err)
			}
			return
		}
		nodes := map[string]bool{}
		for _, n := range c.Nodes {
			nodes[n.ID] = true
		}
		if (len(c.Slots) == 0 && c.Heartbeat == nil) || len(c.Slots) > lim.MaxSlots {
			t.Fatalf("accepted %d slots", len(c.Slots))
		}
		for v, s := range c.Slots {
			if !nodes[s.Node] || math.IsNaN(s.FetchCost) || math.IsInf(s.FetchCost, 0) || s.FetchCost < 0 {
				t.Fatalf("slot %d = %+v accepted", v, s)
			}
		}
	})
}

// FuzzJobRequests: the submit and place validators accept exactly the
// requests with non-empty ids, maps ≥ 0, reduces ≥ 0 (≥ 1 is checked
// against the cluster: see TestBadInputs) and finite data_mb ≥ 0.
func FuzzJobRequests(f *testing.F) {
	f.Add("c", "j", int32(1), int32(1), 1.0)
	f.Add("", "j", int32(-1), int32(0), math.NaN())
	f.Add("c", "j\x00", int32(0), int32(-5), math.Inf(1))
	f.Fuzz(func(t *testing.T, cid, jid string, maps, reduces int32, data float64) {
		idsOK := checkID("", cid) == nil && checkID("", jid) == nil
		errS := checkSubmit(&optdv1.SubmitJobRequest{ClusterId: cid, JobId: jid, Maps: maps, Reduces: reduces})
		if want := idsOK && maps >= 0 && reduces >= 0; (errS == nil) != want {
			t.Fatalf("checkSubmit(%q, %q, %d, %d) = %v", cid, jid, maps, reduces, errS)
		}
		errP := checkPlace(&optdv1.PlaceReducesRequest{ClusterId: cid, JobId: jid, DataMb: data, Reduces: reduces})
		if want := idsOK && reduces >= 0 && data >= 0 && !math.IsInf(data, 1); (errP == nil) != want {
			t.Fatalf("checkPlace(%q, %q, %v, %d) = %v", cid, jid, data, reduces, errP)
		}
		for _, err := range []error{errS, errP} {
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v is not ErrInvalid", err)
			}
		}
	})
}

// FuzzSubmitHeartbeatJob: SubmitJob's task description is accepted by the
// converter and the ledger together, or refused with a validation error
// and the ledger unchanged.
func FuzzSubmitHeartbeatJob(f *testing.F) {
	for _, r := range []*optdv1.SubmitJobRequest{
		hbJob("f", "j"),
		{ClusterId: "f", JobId: "k", Maps: 3, Reduces: 0, MapDemand: map[string]float64{"vcores": 0.5}},
		{ClusterId: "f", JobId: "k", Stages: []*optdv1.JobStage{{Maps: []*optdv1.MapInput{{Nodes: []string{"zz"}}}, Reduces: -1}}},
	} {
		data, _ := proto.Marshal(r)
		f.Add(data)
	}
	c, err := clusterFromRequest(hbCluster("f", "fifo"), DefaultLimits())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var req optdv1.SubmitJobRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		cl, err := loadCluster(&store.State{Cluster: c}, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		spec, err := jobSpec(&req, c.Heartbeat, DefaultLimits())
		if err == nil {
			err = cl.sched.Ledger.Submit(spec)
		}
		if err != nil {
			if code := codeOf(t.Context(), err); code != codes.InvalidArgument && code != codes.AlreadyExists {
				t.Fatalf("error %v has code %v", err, code)
			}
			if cl.sched.Ledger.Active() != 0 {
				t.Fatalf("refused job %v is active", &req)
			}
			return
		}
		if cl.sched.Ledger.Active() != 1 {
			t.Fatalf("accepted job %v is not active", &req)
		}
	})
}

// FuzzRejectFileRefs: no JSON with a "file" key anywhere gets through.
func FuzzRejectFileRefs(f *testing.F) {
	f.Add(`{"data": {"kind": "empirical", "file": "x"}}`)
	f.Add(`{"trace": {"file": "/etc/passwd", "max_reduces": 2}}`)
	f.Add(`[{"a": [{"file": 1}]}]`)
	f.Add(`{"data": {"kind": "uniform", "min": 1, "max": 2}}`)
	f.Fuzz(func(t *testing.T, s string) {
		err := rejectFileRefs("x", []byte(s))
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Fatalf("%v is not ErrInvalid", err)
		}
	})
}

func TestSlotsFromTopology(t *testing.T) {
	req := &optdv1.RegisterClusterRequest{ClusterId: "t", Nodes: []*optdv1.Node{
		{Id: "a", Rack: "r1", ReduceSlots: 2}, {Id: "b", Rack: "r1", ReduceSlots: 1}, {Id: "c", Rack: "r2", ReduceSlots: 1}, {Id: "d", ReduceSlots: 1},
	}}
	c, err := clusterFromRequest(req, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	// a, b: one rack mate (2 hops), two nodes elsewhere (4 hops): (2+8)/4.
	// c, d: three nodes in other racks: 12/4.
	want := []float64{2.5, 2.5, 2.5, 3, 3}
	for v, s := range c.Slots {
		if s.FetchCost != want[v] {
			t.Errorf("slot %d on %s costs %v, want %v", v, s.Node, s.FetchCost, want[v])
		}
	}
}

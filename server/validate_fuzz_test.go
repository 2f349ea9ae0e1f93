package server

import (
	"bytes"
	"context"
	"errors"
	"math"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
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
		// The cases: a node missing a declared resource, a huge
		// rolling horizon.
		{ClusterId: "m", Nodes: []*optdv1.Node{{Id: "a", Capacity: map[string]float64{"vcores": 2}}},
			Heartbeat: &optdv1.HeartbeatPolicy{Spec: "fifo", Resources: []string{"memory_mb", "vcores"}}},
		{ClusterId: "r", Nodes: []*optdv1.Node{{Id: "a", ReduceSlots: 3}}, Policy: &optdv1.PlacementPolicy{Name: "rolling-horizon", Horizon: 1<<31 - 1}},
		// A fitted policy with its model, and with a bad one.
		{ClusterId: "f", Nodes: []*optdv1.Node{{Id: "a", ReduceSlots: 4}}, Policy: &optdv1.PlacementPolicy{Name: "adp-bid-price",
			Params: map[string]float64{"fit_steps": 5, "fit_jobs": 50},
			Model: &optdv1.PlacementModel{ArrivalRate: 0.5, ServiceRate: 1, MaxJobsInService: 2,
				WorkloadJson: `{"data": {"kind": "uniform", "min": 1, "max": 10}, "reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`}}},
		{ClusterId: "h", Nodes: []*optdv1.Node{{Id: "a", ReduceSlots: 4}}, Policy: &optdv1.PlacementPolicy{Name: "rollout",
			Params: map[string]float64{"samples": 2},
			Model: &optdv1.PlacementModel{ArrivalRate: 0.5, ServiceRate: 1, MaxJobsInService: 2, SlotCosts: []float64{1, 2, -3, math.Inf(1)},
				WorkloadJson: `{"data": {"kind": "uniform", "min": 1, "max": 10}, "reduces": {"kind": "uniform-int", "min": 1, "max": 2}}`}}},
		{ClusterId: "g", Nodes: []*optdv1.Node{{Id: "a", ReduceSlots: 4}}, Policy: &optdv1.PlacementPolicy{Name: "adp-penalty",
			Model: &optdv1.PlacementModel{ArrivalRate: math.NaN(), WorkloadJson: `{"data"`}}},
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
		c, err := clusterFromRequest(context.Background(), &req, lim)
		if err != nil {
			if code := codeOf(t.Context(), err); !errors.Is(err, ErrInvalid) && code != codes.InvalidArgument && code != codes.ResourceExhausted {
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
	f.Add("c", "j", int32(1), int32(1), 1.7e308) // the data_mb
	f.Add("c", "j", int32(1), int32(1), maxDataMB)
	f.Fuzz(func(t *testing.T, cid, jid string, maps, reduces int32, data float64) {
		idsOK := checkID("", cid) == nil && checkID("", jid) == nil
		errS := checkSubmit(&optdv1.SubmitJobRequest{ClusterId: cid, JobId: jid, Maps: maps, Reduces: reduces})
		if want := idsOK && maps >= 0 && reduces >= 0; (errS == nil) != want {
			t.Fatalf("checkSubmit(%q, %q, %d, %d) = %v", cid, jid, maps, reduces, errS)
		}
		errP := checkPlace(&optdv1.PlaceReducesRequest{ClusterId: cid, JobId: jid, DataMb: data, Reduces: reduces})
		if want := idsOK && reduces >= 0 && data >= 0 && data <= maxDataMB; (errP == nil) != want {
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
		// The cases: maps vs stages, an absurd submit_s.
		{ClusterId: "f", JobId: "k", Maps: 5, Stages: []*optdv1.JobStage{{Maps: []*optdv1.MapInput{{}}}}},
		{ClusterId: "f", JobId: "k", Maps: 1, SubmitS: at(1e300)},
	} {
		data, _ := proto.Marshal(r)
		f.Add(data)
	}
	c, err := clusterFromRequest(context.Background(), hbCluster("f", "fifo"), DefaultLimits())
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
	c, err := clusterFromRequest(context.Background(), req, DefaultLimits())
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

// FuzzRequestCodec: the server's codec never panics, decodes what proto
// decodes, and marks a request it cannot decode for invalid UTF-8 so that
// checkDecoded refuses it with InvalidArgument naming a field.
func FuzzRequestCodec(f *testing.F) {
	for _, r := range [][]byte{
		protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "h\xff"),
		protowire.AppendBytes(protowire.AppendTag(nil, 2, protowire.BytesType), protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xc3")),
	} {
		f.Add(r)
	}
	data, _ := proto.Marshal(hbCluster("h", "fifo"))
	f.Add(data)
	codec := newRequestCodec()
	f.Fuzz(func(t *testing.T, data []byte) {
		var req optdv1.RegisterClusterRequest
		err := codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, &req)
		plainErr := proto.Unmarshal(data, new(optdv1.RegisterClusterRequest))
		if (err == nil) == (plainErr == nil) {
			if err == nil && checkDecoded(&req) != nil && !bytes.Contains(data, []byte{0xff, 0xff, 0xff, 0x0f}) {
				t.Fatalf("a request proto decodes is marked: %v", checkDecoded(&req))
			}
			return
		}
		if err != nil {
			t.Fatalf("codec failed (%v) where proto decoded", err)
		}
		if e := checkDecoded(&req); e == nil || !errors.Is(e, ErrInvalid) {
			t.Fatalf("request proto refuses (%v) decoded unmarked: %v", plainErr, e)
		}
	})
}

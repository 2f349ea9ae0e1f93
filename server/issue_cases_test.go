package server

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// rawCodec sends and receives bytes as they are: requests no Go client
// would encode (invalid UTF-8 in a string field).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}
func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}
func (rawCodec) Name() string { return "proto" }

// TestIssueCasesRefused lists every input the issue found accepted though
// it can never run or makes no sense, and checks each is refused with
// InvalidArgument naming the field, the value and the limit, and changes
// nothing (the cluster's state before and after compared).
func TestIssueCasesRefused(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	if _, err := ts.cluster.RegisterCluster(ctx, hbCluster("h", "fifo")); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.RegisterCluster(ctx, costsCluster("p", "", 1, 2, 3)); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "p", JobId: "j", Reduces: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.SubmitJob(ctx, hbJob("h", "j1")); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(5)}); err != nil {
		t.Fatal(err)
	}
	workload, err := os.ReadFile("../examples/workload.json")
	if err != nil {
		t.Fatal(err)
	}
	rawCall := func(method string, msg []byte) error {
		var out []byte
		return ts.conn.Invoke(ctx, method, &msg, &out, grpc.ForceCodecV2(rawCodec{}))
	}
	str := func(num protowire.Number, s string) []byte {
		return protowire.AppendString(protowire.AppendTag(nil, num, protowire.BytesType), s)
	}
	msgField := func(num protowire.Number, b []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
	}
	cases := []struct {
		name string
		call func() error
		want []string // substrings of the message: field, value, limit
	}{
		{"a container that fits no node", func() error {
			r := hbJob("h", "huge")
			r.MapDemand = map[string]float64{"memory_mb": 100_000, "vcores": 1}
			_, err := ts.cluster.SubmitJob(ctx, r)
			return err
		}, []string{"map_demand", "100000", "fits no node"}},
		{"a node missing a declared resource", func() error {
			r := hbCluster("m", "fifo")
			r.Nodes[1].Capacity = map[string]float64{"memory_mb": 8192}
			_, err := ts.cluster.RegisterCluster(ctx, r)
			return err
		}, []string{"nodes[1].capacity", `no "vcores"`}},
		{"maps: 5 with one map in stages", func() error {
			r := hbJob("h", "five")
			r.Maps, r.Stages[0].Maps = 5, r.Stages[0].Maps[:1]
			_, err := ts.cluster.SubmitJob(ctx, r)
			return err
		}, []string{"maps = 5", "stages[0] lists 1 maps"}},
		{"data_mb 1.7e308", func() error {
			_, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "p", JobId: "j", DataMb: 1.7e308})
			return err
		}, []string{"data_mb = 1.7e+308", "1e+12"}},
		{"negative slot costs", func() error {
			_, err := ts.optimize.ComputeThresholds(ctx, &optdv1.ComputeThresholdsRequest{WorkloadJson: string(workload), Jobs: 2, SlotCosts: []float64{1, -2, 3, 4}})
			return err
		}, []string{"slot_costs[1] = -2", "≥ 0"}},
		{"a negative fetch cost", func() error {
			_, err := ts.cluster.RegisterCluster(ctx, costsCluster("neg", "", 1, -2))
			return err
		}, []string{"slots[1].fetch_cost = -2", "≥ 0"}},
		{"now_s 1e300", func() error {
			_, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "b", NowS: at(1e300)})
			return err
		}, []string{"now_s = 1e+300", "1e+10"}},
		{"now_s going backwards", func() error {
			_, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(4)})
			return err
		}, []string{"now_s = 4", "now_s = 5"}},
		{"submit_s 1e300", func() error {
			r := hbJob("h", "late")
			r.SubmitS = at(1e300)
			_, err := ts.cluster.SubmitJob(ctx, r)
			return err
		}, []string{"submit_s = 1e+300", "1e+10"}},
		{"rolling-horizon horizon 2^31-1", func() error {
			r := costsCluster("roll", "rolling-horizon", 1, 2, 3)
			r.Policy.Horizon = 1<<31 - 1
			_, err := ts.cluster.RegisterCluster(ctx, r)
			return err
		}, []string{"policy.horizon = 2147483647", "MiB"}},
		{"invalid UTF-8 in an id", func() error {
			return rawCall("/optd.v1.ClusterService/GetClusterState", str(1, "h\xff"))
		}, []string{"cluster_id = <invalid UTF-8>"}},
		{"invalid UTF-8 in a nested field", func() error {
			req := append(str(1, "u"), msgField(2, str(1, "ok"))...)
			req = append(req, msgField(2, str(1, "bad\xc3"))...)
			return rawCall("/optd.v1.ClusterService/RegisterCluster", req)
		}, []string{"nodes[1].id = <invalid UTF-8>"}},
	}
	before := map[string]*optdv1.ClusterState{"h": clusterState(t, ts, "h"), "p": clusterState(t, ts, "p")}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			st, _ := status.FromError(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("err = %v, want InvalidArgument", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(st.Message(), w) {
					t.Errorf("message %q does not contain %q", st.Message(), w)
				}
			}
			for id, b := range before {
				if a := clusterState(t, ts, id); fmt.Sprint(a) != fmt.Sprint(b) {
					t.Errorf("cluster %s changed:\n%v\n%v", id, b, a)
				}
			}
		})
	}
	l, err := ts.cluster.ListClusters(ctx, &optdv1.ListClustersRequest{})
	if err != nil || len(l.GetClusters()) != 2 {
		t.Errorf("clusters after the refusals: %v, %v; want h and p only", l, err)
	}
}

// TestManyBigClustersRefused is the issue's memory attack, scaled down:
// clusters of 100,000 slots each are registered until the total slot limit
// refuses one with ResourceExhausted naming it.
func TestManyBigClustersRefused(t *testing.T) {
	ts := startServer(t, "", Options{Limits: Limits{MaxTotalSlots: 300_000}}, nil)
	ctx := ctxT(t)
	for k := range 4 {
		_, err := ts.cluster.RegisterCluster(ctx, &optdv1.RegisterClusterRequest{ClusterId: fmt.Sprint("c", k),
			Nodes: []*optdv1.Node{{Id: "n", ReduceSlots: 100_000}}})
		if k < 3 {
			if err != nil {
				t.Fatalf("cluster %d: %v", k, err)
			}
			continue
		}
		wantCode(t, err, codes.ResourceExhausted, "limits.max_total_slots = 300000")
	}
	if _, err := ts.cluster.DeleteCluster(ctx, &optdv1.DeleteClusterRequest{ClusterId: "c0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ts.cluster.RegisterCluster(ctx, &optdv1.RegisterClusterRequest{ClusterId: "c3",
		Nodes: []*optdv1.Node{{Id: "n", ReduceSlots: 100_000}}}); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}

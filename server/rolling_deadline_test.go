package server

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/thresholds"
)

// TestRollingTableHonoursDeadline: a PlaceReduces whose rolling-horizon
// table is still being built when its deadline passes stops building,
// fails with DEADLINE_EXCEEDED and applies nothing, and the cluster stays
// usable: its state reads at once, and a job placed afterwards is placed.
// H doubles from a small table until one outlasts the deadline (a machine
// fast enough to build the largest allowed table in time skips), so that
// the test never depends on the machine's speed.
func TestRollingTableHonoursDeadline(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	const slots, reduces = 64, 32
	costs := make([]float64, slots)
	for i := range costs {
		costs[i] = float64(1 + i%7)
	}
	for h := 100; ; h *= 2 {
		if thresholds.TableBytes(h+1, slots) > float64(thresholds.DefaultMaxTableBytes) {
			t.Skipf("every rolling table up to H = %d was built within the deadline", h/2)
		}
		id := "roll" + strconv.Itoa(h)
		reg := costsCluster(id, "rolling-horizon", costs...)
		reg.Policy.Horizon = int32(h)
		if _, err := ts.cluster.RegisterCluster(ctx, reg); err != nil {
			t.Fatal(err)
		}
		for _, j := range []struct {
			id string
			r  int32
		}{{"big", reduces}, {"small", 1}} {
			if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: id, JobId: j.id, Maps: 1, Reduces: j.r}); err != nil {
				t.Fatal(err)
			}
		}
		before := clusterState(t, ts, id)
		short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		_, err := ts.cluster.PlaceReduces(short, &optdv1.PlaceReducesRequest{ClusterId: id, JobId: "big", DataMb: 1000})
		cancel()
		st, _ := status.FromError(err)
		if err == nil || st.Code() == codes.DeadlineExceeded && strings.Contains(st.Message(), "not started") {
			// Built in time, or (on a loaded machine) the deadline passed
			// before the call held the lock: try a larger table.
			continue
		}
		if st.Code() != codes.DeadlineExceeded {
			t.Fatalf("H = %d: %v, want DEADLINE_EXCEEDED while the table was built", h, err)
		}
		got, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: id})
		if err != nil {
			t.Fatalf("H = %d: the state after the timeout: %v", h, err)
		}
		if got.GetState().GetFreeSlots() != before.GetFreeSlots() || got.GetState().GetJobs()[0].GetPlaced() {
			t.Errorf("H = %d: the timed-out call applied something: job %v, %d free slots (before: %d)", h, got.GetState().GetJobs()[0], got.GetState().GetFreeSlots(), before.GetFreeSlots())
		}
		placed, err := ts.cluster.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: id, JobId: "small", DataMb: 10})
		if err != nil || len(placed.GetSlots()) != 1 {
			t.Fatalf("H = %d: a placement after the timeout: %v, %v", h, placed, err)
		}
		t.Logf("H = %d: the table outlasted the deadline, nothing applied, the cluster usable", h)
		return
	}
}

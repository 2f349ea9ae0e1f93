package server

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// TestHeartbeatRetryAfterRestart: under several heartbeat policies, the
// server restarts between each state-changing heartbeat with a seq and its
// retry; the retry still gets the first answer, marked retried, and changes
// nothing; a lower seq and a clock gone back are still refused after the
// restart (the node's memory is stored with the heartbeat's change).
func TestHeartbeatRetryAfterRestart(t *testing.T) {
	for _, spec := range []string{"fifo", "fair+late", "haste-a"} {
		t.Run(spec, func(t *testing.T) {
			dir := t.TempDir()
			ts := startServer(t, dir, Options{}, nil)
			ctx := ctxT(t)
			if _, err := ts.cluster.RegisterCluster(ctx, hbCluster("h", spec)); err != nil {
				t.Fatal(err)
			}
			if _, err := ts.cluster.SubmitJob(ctx, hbJob("h", "j1")); err != nil {
				t.Fatal(err)
			}
			// running lists the started attempts, oldest first, and the
			// node each runs on (the node whose heartbeat started it).
			var running []int64
			nodeOf := map[int64]string{}
			now := 1.0
			seqs := map[string]uint64{}
			retried := 0
			for k := range 8 {
				req := &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: []string{"a", "b", "c"}[k%3], NowS: at(now)}
				if len(running) > 0 && k%2 == 1 {
					// Report the oldest attempt finished, on its node.
					req.NodeId, req.Finished = nodeOf[running[0]], running[:1]
				}
				seqs[req.NodeId]++
				seq := seqs[req.NodeId]
				req.Seq = seq
				state := clusterState(t, ts, "h")
				first, err := ts.cluster.Heartbeat(ctx, req)
				if err != nil {
					t.Fatalf("seq %d: %v", seq, err)
				}
				if len(req.Finished) > 0 {
					running = running[1:]
				}
				for _, a := range first.GetActions() {
					if a.GetActionKind() == optdv1.ActionKind_ACTION_KIND_START {
						running = append(running, a.GetAttemptId())
						nodeOf[a.GetAttemptId()] = req.NodeId
					}
				}
				applied := clusterState(t, ts, "h")
				ts.stop()
				ts = startServer(t, dir, Options{}, nil)
				again, err := ts.cluster.Heartbeat(ctx, req)
				if proto.Equal(state, applied) {
					// The heartbeat changed nothing durable: its retry is
					// decided again, which applies nothing new either.
					if err != nil {
						t.Fatalf("seq %d: the retry of a heartbeat that changed nothing: %v", seq, err)
					}
					continue
				}
				retried++
				if err != nil || !again.GetRetried() {
					t.Fatalf("seq %d after a restart: %v, %v; want the first answer, retried", seq, again, err)
				} else {
					again.Retried = false
					if !proto.Equal(first, again) {
						t.Errorf("seq %d after a restart: %v, want %v", seq, again, first)
					}
					if after := clusterState(t, ts, "h"); !proto.Equal(applied, after) {
						t.Errorf("seq %d: the retry after a restart changed the state:\n%v\n%v", seq, applied, after)
					}
				}
				if seq > 1 {
					_, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: req.NodeId, NowS: at(now + 1), Seq: seq - 1})
					wantCode(t, err, codes.FailedPrecondition, "seq")
				}
				_, err = ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: req.NodeId, NowS: at(now - 0.5)})
				wantCode(t, err, codes.InvalidArgument, "now_s")
				now++
			}
			if retried < 3 {
				t.Errorf("only %d heartbeats changed the cluster", retried)
			}
		})
	}
}

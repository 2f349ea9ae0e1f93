package server

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// TestCrashKeepsHeartbeats kills a subprocess server with SIGKILL during a
// stream of heartbeats (each reporting a completion and getting starts) and
// job submissions, then rebuilds the ledger from the store as a restarted
// server does: every acknowledged start is running unless its completion
// was acknowledged or in flight, no acknowledged completion is running, and
// the only unacknowledged attempts are the in-flight heartbeat's starts.
func TestCrashKeepsHeartbeats(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess server")
	}
	for round := range 2 {
		t.Run(fmt.Sprint("round=", round), func(t *testing.T) { heartbeatCrashRound(t, uint64(round)) })
	}
}

func heartbeatCrashRound(t *testing.T, seed uint64) {
	dir := t.TempDir()
	cmd, cl := spawnCrashServer(t, dir)
	ctx := ctxT(t)
	if _, err := cl.RegisterCluster(ctx, hbCluster("hc", "fifo")); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"a", "b", "c"}
	rng := rand.New(rand.NewPCG(seed, 9))
	running := map[int64]string{} // acknowledged, not acknowledged finished
	done := map[int64]bool{}      // acknowledged finished
	var maxAcked int64
	var inFlightFinished int64 // the completion the killed call reported
	active, jobs := 0, 0
	killAt := time.Now().Add(time.Duration(200+rng.IntN(400)) * time.Millisecond)
	go func() {
		time.Sleep(time.Until(killAt))
		cmd.Process.Signal(syscall.SIGKILL)
	}()
	for n := 0; ; n++ {
		if active < 2 {
			req := hbJob("hc", fmt.Sprint("j", jobs))
			for _, m := range req.Stages[0].Maps {
				m.Nodes = []string{nodes[rng.IntN(3)]}
			}
			if _, err := cl.SubmitJob(ctx, req); err != nil {
				break
			}
			jobs++
			active++
		}
		node := nodes[n%3]
		var fin []int64
		for id, on := range running {
			if on == node {
				fin = []int64{id}
				break
			}
		}
		now := float64(n + 1)
		r, err := cl.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "hc", NodeId: node, NowS: &now, Finished: fin})
		if err != nil {
			if len(fin) > 0 {
				inFlightFinished = fin[0]
			}
			break
		}
		for _, id := range fin {
			delete(running, id)
			done[id] = true
		}
		for _, a := range r.GetActions() {
			if a.GetKind() == "start" {
				running[a.GetAttemptId()] = node
				maxAcked = max(maxAcked, a.GetAttemptId())
			}
		}
		active -= len(r.GetFinishedJobs())
	}
	cmd.Wait()

	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	state, err := st.Load(ctx, "hc")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	c, err := loadCluster(state, DefaultLimits())
	if err != nil {
		t.Fatalf("rebuilding the ledger from the store: %v", err)
	}
	stored := map[int64]string{}
	for _, n := range c.sched.Ledger.View(0).Nodes {
		for _, a := range n.Running {
			stored[int64(a.ID)] = n.ID
		}
	}
	t.Logf("killed after %d acknowledged completions and %d jobs; %d attempts running", len(done), jobs, len(stored))
	if len(done) == 0 {
		t.Fatalf("no heartbeat was acknowledged before the kill")
	}
	for id, node := range running {
		if stored[id] != node && id != inFlightFinished {
			t.Errorf("acknowledged attempt %d on %s is not running after the crash", id, node)
		}
	}
	for id := range done {
		if _, ok := stored[id]; ok {
			t.Errorf("attempt %d, whose completion was acknowledged, is running after the crash", id)
		}
	}
	for id := range stored {
		if _, ok := running[id]; !ok && id <= maxAcked {
			t.Errorf("attempt %d is running but was never acknowledged as started (or was acknowledged finished)", id)
		}
	}

	// A restarted server serves the same ledger and decides on it.
	ts := startServer(t, dir, Options{}, nil)
	gs, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "hc"})
	if err != nil {
		t.Fatal(err)
	}
	if int(gs.GetState().GetRunningAttempts()) != len(stored) {
		t.Errorf("restarted server has %d running attempts, the store %d", gs.GetState().GetRunningAttempts(), len(stored))
	}
	now := 1e6
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "hc", NodeId: "a", NowS: &now}); err != nil {
		t.Errorf("heartbeat after restart: %v", err)
	}
}

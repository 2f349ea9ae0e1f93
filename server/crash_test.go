package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// envCrashServer makes the test binary a server on that data directory
// (see TestMain): it writes its address to DIR/addr and serves until killed.
const envCrashServer = "OPTD_TEST_CRASH_SERVER_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCrashServer); dir != "" {
		os.Exit(crashServer(dir))
	}
	if dir := os.Getenv(envRestartDir); dir != "" {
		os.Exit(measureRestart(dir))
	}
	os.Exit(m.Run())
}

func crashServer(dir string) int {
	st, err := store.Open(dir, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cs, err := NewClusterService(st, Limits{}, nil, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := New(Options{Listen: "127.0.0.1:0", DataDir: dir, ShutdownTimeout: time.Second,
		Register: []func(grpc.ServiceRegistrar){cs.Register}})
	if err == nil {
		err = srv.Listen()
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "addr.tmp"), []byte(srv.Addr().String()), 0o600)
	}
	if err == nil {
		err = os.Rename(filepath.Join(dir, "addr.tmp"), filepath.Join(dir, "addr"))
	}
	if err == nil {
		err = srv.Run(context.Background())
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// ackedJob is what the client knows was acknowledged about a job.
type ackedJob struct {
	placed bool
	slots  []int32
}

// TestCrashKeepsAcknowledgedChanges runs a server in a subprocess, drives a
// stream of state changes (submit, place, finish) at it, kills it with
// SIGKILL at a random moment, and checks that the store holds exactly the
// acknowledged changes, plus possibly the one change in flight at the kill
// (it may have committed before its answer was lost), and nothing else.
func TestCrashKeepsAcknowledgedChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess server")
	}
	for round := range 3 {
		t.Run(fmt.Sprint("round=", round), func(t *testing.T) { crashRound(t, uint64(round)) })
	}
}

func crashRound(t *testing.T, seed uint64) {
	dir := t.TempDir()
	cmd, cl := spawnCrashServer(t, dir)
	ctx := ctxT(t)
	costs := make([]float64, 24)
	for i := range costs {
		costs[i] = float64(i%7 + 1)
	}
	if _, err := cl.RegisterCluster(ctx, costsCluster("crash", "", costs...)); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(seed, 6))
	acked := map[string]*ackedJob{}
	var order []string // acked unfinished jobs, submission order
	placedAcked := 0
	killAt := time.Now().Add(time.Duration(150+rng.IntN(350)) * time.Millisecond)
	go func() {
		time.Sleep(time.Until(killAt))
		cmd.Process.Signal(syscall.SIGKILL)
	}()
	// inFlight describes the change whose answer was lost, if any.
	var inFlight func(st *store.State) bool
	for n := 0; inFlight == nil; n++ {
		id := fmt.Sprintf("j%d", n)
		r := int32(1 + rng.IntN(3))
		if _, err := cl.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "crash", JobId: id, Maps: 4, Reduces: r}); err != nil {
			inFlight = func(st *store.State) bool { return hasJob(st, id) }
			break
		}
		acked[id] = &ackedJob{}
		order = append(order, id)
		p, err := cl.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: "crash", JobId: id, DataMb: float64(1 + rng.IntN(100))})
		switch {
		case err == nil:
			acked[id].placed = true
			for _, s := range p.GetSlots() {
				acked[id].slots = append(acked[id].slots, s.GetSlot())
			}
			placedAcked++
		case isUnavailable(err):
			inFlight = func(st *store.State) bool { return jobPlaced(st, id) }
		}
		if inFlight != nil || len(order) < 4 {
			continue
		}
		old := order[0]
		if _, err := cl.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "crash", JobId: old}); err != nil {
			inFlight = func(st *store.State) bool { return !hasJob(st, old) }
			break
		}
		delete(acked, old)
		order = order[1:]
	}
	cmd.Wait()

	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	state, err := st.Load(ctx, "crash")
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	applied := inFlight(state)
	t.Logf("killed after %d acknowledged placements; the change in flight was applied: %v", placedAcked, applied)
	// Every acknowledged job is there, as acknowledged; the only other job
	// state allowed is the one the in-flight change produced.
	for id, a := range acked {
		j := findJob(state, id)
		if j == nil {
			if applied && !hasJob(state, id) && !slices.Contains(order[1:], id) {
				continue // the in-flight JobFinished removed it
			}
			t.Errorf("acknowledged job %s is missing", id)
			continue
		}
		if a.placed && (!j.Placed || !slices.Equal(toInt32(j.Slots), a.slots)) {
			t.Errorf("job %s: stored placed=%v slots %v, acknowledged %v", id, j.Placed, j.Slots, a.slots)
		}
		if !a.placed && j.Placed && !applied {
			t.Errorf("job %s is placed in the store but its placement was never acknowledged", id)
		}
	}
	extra := 0
	for _, j := range state.Jobs {
		if acked[j.ID] == nil {
			extra++
		}
	}
	if extra > 1 || (extra == 1 && !applied) {
		t.Errorf("store holds %d unacknowledged jobs (in-flight change applied: %v)", extra, applied)
	}
	// The estimator saw exactly the acknowledged placements (+1 if the
	// in-flight placement committed).
	if got := state.Estimator.Seen; got != int64(placedAcked) && got != int64(placedAcked+1) {
		t.Errorf("estimator seen = %d, want %d (or +1)", got, placedAcked)
	}

	// A restarted server serves the same state and accepts new changes.
	ts := startServer(t, dir, Options{}, nil)
	gs, err := ts.cluster.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs.GetState().GetJobs()) != len(state.Jobs) || gs.GetState().GetEstimator().GetSeen() != state.Estimator.Seen {
		t.Errorf("restarted state %v differs from the store %+v", gs.GetState(), state)
	}
	if _, err := ts.cluster.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: "crash", JobId: "after", Reduces: 1}); err != nil {
		t.Errorf("submit after restart: %v", err)
	}
}

// spawnCrashServer starts the test binary as a server on dir (see
// TestMain) and returns it and a client once it serves. The test kills it
// (SIGKILL, then cmd.Wait); cleanup kills it if the test did not.
func spawnCrashServer(t *testing.T, dir string) (*exec.Cmd, optdv1.ClusterServiceClient) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashServer+"="+dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	var addr []byte
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var err error
		if addr, err = os.ReadFile(filepath.Join(dir, "addr")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("subprocess server did not start: %s", stderr.String())
		}
	}
	conn, err := grpc.NewClient(string(addr), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	waitServing(t, conn)
	return cmd, optdv1.NewClusterServiceClient(conn)
}

// isUnavailable: the call failed for a reason other than the state (the
// server died), so its change may or may not have committed.
func isUnavailable(err error) bool {
	return err != nil && status.Code(err) != codes.FailedPrecondition
}

func findJob(st *store.State, id string) *store.Job {
	for i := range st.Jobs {
		if st.Jobs[i].ID == id {
			return &st.Jobs[i]
		}
	}
	return nil
}

func hasJob(st *store.State, id string) bool { return findJob(st, id) != nil }

func jobPlaced(st *store.State, id string) bool {
	j := findJob(st, id)
	return j != nil && j.Placed
}

func toInt32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

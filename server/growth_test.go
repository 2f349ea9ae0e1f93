package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// envRestartDir makes the test binary measure a restart on that data
// directory (see TestMain): open the store, load cluster "g", print
// restartFigures as JSON, exit.
const envRestartDir = "OPTD_TEST_RESTART_DIR"

// envGrowthJobs sets how many jobs TestHeartbeatLogFollowsLiveState runs
// through its cluster (default 2000; `make growth` runs 1000000).
const envGrowthJobs = "OPTD_GROWTH_JOBS"

// restartFigures is what a fresh process measures of a restart.
type restartFigures struct {
	// OpenMS is the time to open the store (verifying it); LoadMS that
	// to load the cluster (replaying its event log into its ledger) on its
	// first call.
	OpenMS, LoadMS float64
	// HeapBytes is the Go heap in use after the load (after a GC), RSSBytes
	// the process's resident memory.
	HeapBytes, RSSBytes uint64
	// LogEntries and LogBytes describe the cluster's stored event log.
	LogEntries, LogBytes int
	// Running is the number of running attempts the loaded ledger holds.
	Running int32
}

func measureRestart(dir string) int {
	start := time.Now()
	st, err := store.Open(dir, 5*time.Second)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	var f restartFigures
	f.OpenMS = msSince(start)
	state, err := st.Load(context.Background(), "g")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, e := range state.Log {
		f.LogEntries, f.LogBytes = f.LogEntries+1, f.LogBytes+len(e)
	}
	state = nil
	start = time.Now()
	cs, err := NewClusterService(st, Limits{}, nil, nil)
	if err == nil {
		var gs *optdv1.GetClusterStateResponse
		gs, err = cs.GetClusterState(context.Background(), &optdv1.GetClusterStateRequest{ClusterId: "g"})
		if err == nil {
			f.Running = gs.GetState().GetRunningAttempts()
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	f.LoadMS = msSince(start)
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f.HeapBytes = ms.HeapInuse
	if data, err := os.ReadFile("/proc/self/statm"); err == nil {
		if fields := strings.Fields(string(data)); len(fields) > 1 {
			pages, _ := strconv.ParseUint(fields[1], 10, 64)
			f.RSSBytes = pages * uint64(os.Getpagesize())
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(f); err != nil {
		return 1
	}
	return 0
}

// growthCluster is a heartbeat cluster of 17 nodes: n0 holds the job that
// never finishes, n1…n16 are worked by one goroutine each.
func growthCluster() *optdv1.RegisterClusterRequest {
	req := &optdv1.RegisterClusterRequest{ClusterId: "g",
		Heartbeat: &optdv1.HeartbeatPolicy{Spec: "fifo", Resources: []string{"memory_mb", "vcores"}}}
	for i := range 17 {
		req.Nodes = append(req.Nodes, &optdv1.Node{Id: fmt.Sprint("n", i), Rack: "r", Capacity: map[string]float64{"memory_mb": 1 << 20, "vcores": 1 << 10}})
	}
	return req
}

// TestHeartbeatLogFollowsLiveState runs many short jobs through one
// heartbeat cluster while one job stays active, then checks that the
// stored event log is bounded by the live state (a checkpoint and at most
// compactRatio times its size in events), however many jobs went through,
// and that a fresh process restarts from it with the live ledger. It logs
// the figures of the restart (time, memory); CI runs 2000 jobs, `make
// growth` a million.
func TestHeartbeatLogFollowsLiveState(t *testing.T) {
	if testing.Short() {
		t.Skip("runs thousands of jobs")
	}
	jobs := 2000
	if v := os.Getenv(envGrowthJobs); v != "" {
		var err error
		if jobs, err = strconv.Atoi(v); err != nil {
			t.Fatalf("%s=%q: %v", envGrowthJobs, v, err)
		}
	}
	dir := t.TempDir()
	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := NewClusterService(st, Limits{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context() // a million jobs take longer than ctxT's limit
	if _, err := cs.RegisterCluster(ctx, growthCluster()); err != nil {
		t.Fatal(err)
	}
	job := func(id, node string) *optdv1.SubmitJobRequest {
		d := map[string]float64{"memory_mb": 64, "vcores": 1}
		now := 0.0
		return &optdv1.SubmitJobRequest{ClusterId: "g", JobId: id, SubmitS: &now, Maps: 1, MapDemand: d, ReduceDemand: d,
			Stages: []*optdv1.JobStage{{Maps: []*optdv1.MapInput{{Nodes: []string{node}}}}}}
	}
	// The job that stays active: its map starts on n0, which never reports.
	if _, err := cs.SubmitJob(ctx, job("long", "n0")); err != nil {
		t.Fatal(err)
	}
	now := 1.0
	if r, err := cs.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "g", NodeId: "n0", NowS: &now}); err != nil || len(r.GetActions()) != 1 {
		t.Fatalf("starting the long job: %v, %v", r, err)
	}

	var done atomic.Int64
	// logBytes reads the stored event log: its entries, their bytes and
	// the first one's (the checkpoint, once the log was compacted).
	logBytes := func() (entries, bytes, first int) {
		s, err := st.Load(ctx, "g")
		if err != nil {
			t.Error(err)
			return 0, 0, 0
		}
		for i, e := range s.Log {
			entries, bytes = entries+1, bytes+len(e)
			if i == 0 {
				first = len(e)
			}
		}
		return entries, bytes, first
	}
	var maxLog, maxCheckpoint int
	var mu sync.Mutex
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := 1; w <= 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := fmt.Sprint("n", w)
			running := map[int64]bool{}
			for k := 0; done.Load() < int64(jobs); k++ {
				// A batch of jobs, then heartbeats until the node has
				// nothing left to run (its tasks finish at the next
				// heartbeat; other nodes may take some of the batch).
				for b := range 20 {
					if _, err := cs.SubmitJob(ctx, job(fmt.Sprintf("w%d-%d-%d", w, k, b), node)); err != nil {
						errs <- err
						return
					}
				}
				for {
					var fin []int64
					for id := range running {
						fin = append(fin, id)
					}
					clear(running)
					at := float64(time.Since(start).Milliseconds()) + 2
					r, err := cs.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "g", NodeId: node, NowS: &at, Finished: fin})
					if err != nil {
						errs <- err
						return
					}
					for _, a := range r.GetActions() {
						if a.GetKind() == "start" {
							running[a.GetAttemptId()] = true
						}
					}
					for _, id := range r.GetFinishedJobs() {
						if _, err := cs.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: "g", JobId: id}); err != nil {
							errs <- err
							return
						}
						if n := done.Add(1); n%(int64(jobs)/16+1) == 0 {
							_, b, cp := logBytes()
							mu.Lock()
							maxLog, maxCheckpoint = max(maxLog, b), max(maxCheckpoint, cp)
							mu.Unlock()
						}
					}
					if len(running) == 0 {
						break
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	elapsed := time.Since(start)
	entries, bytes, _ := logBytes()
	disk := st.DiskBytes()
	st.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envRestartDir+"="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	var f restartFigures
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("restart printed %q: %v", out, err)
	}
	t.Logf("%d jobs in %v (%.0f jobs/s): event log %d entries, %d bytes (at most %d bytes on the way, checkpoints of at most %d); engine %d bytes on disk",
		done.Load(), elapsed.Round(time.Millisecond), float64(done.Load())/elapsed.Seconds(), entries, bytes, maxLog, maxCheckpoint, disk)
	t.Logf("restart in a fresh process: open %.1f ms, first call (replaying the log) %.1f ms, heap %.1f MB, RSS %.1f MB, %d running attempts",
		f.OpenMS, f.LoadMS, float64(f.HeapBytes)/1e6, float64(f.RSSBytes)/1e6, f.Running)
	if f.Running != 1 {
		t.Errorf("the restarted ledger runs %d attempts, want the long job's 1", f.Running)
	}
	// Bounded by the live state, whatever the number of jobs: a checkpoint
	// (the long job and the batches in flight) and the events since, at
	// most compactRatio checkpoints or compactMinBytes, plus one call's.
	if limit := compactMinBytes + (1+compactRatio)*maxCheckpoint + 16<<10; maxLog > limit || bytes > limit {
		t.Errorf("the event log reached %d bytes (%d at the end) after %d jobs, with checkpoints of at most %d bytes; want at most %d",
			maxLog, bytes, jobs, maxCheckpoint, limit)
	}
}

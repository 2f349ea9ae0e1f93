package mdpoptimal

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// recorder keeps every request the heartbeat's reduce placer asks the
// policy and its answer.
type recorder struct {
	*Placement
	reqs []policy.PlacementRequest
	decs []policy.PlacementDecision
}

func (r *recorder) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	d, err := r.Placement.Place(req)
	if err == nil {
		c := *req
		c.Free, c.Held = slices.Clone(req.Free), slices.Clone(req.Held)
		r.reqs, r.decs = append(r.reqs, c), append(r.decs, d)
	}
	return d, err
}

// heartbeatScenario is a cluster of 4 nodes with 2 reduce slots each (the
// 8 slots of mdp-8slots.json in node order: node n1 holds the slots of
// cost 1 and 2, n4 those of 37 and 50), on two racks with a network, and
// jobs whose map outputs make X the model's 2, 4, 40 or 80 MB with 1 or
// 2 reducers, arriving every gap seconds.
func heartbeatScenario(t *testing.T, jobs int, gap float64, seed uint64) *sim.ClusterScenario {
	t.Helper()
	var js []string
	for i := range jobs {
		x := []struct {
			maps    int
			mb      float64
			reduces int
		}{{2, 1, 1}, {4, 10, 1}, {4, 1, 2}, {8, 10, 2}}[(i*7+int(seed))%4]
		js = append(js, fmt.Sprintf(`{"id": "j%02d", "submit_s": %g, "maps": %d, "reduces": %d, "map_output_mb": %g,
			"map_work": {"kind": "uniform", "min": 4, "max": 8}, "reduce_work": {"kind": "uniform", "min": 20, "max": 60}}`,
			i, gap*float64(i), x.maps, x.reduces, x.mb))
	}
	doc := fmt.Sprintf(`{"name": "mdp-heartbeat", "seed": %d, "heartbeat_s": 1,
		"cluster": {"nodes": [{"id": "n1", "rack": "r1", "map_slots": 2, "reduce_slots": 2},
			{"id": "n2", "rack": "r1", "map_slots": 2, "reduce_slots": 2},
			{"id": "n3", "rack": "r2", "map_slots": 2, "reduce_slots": 2},
			{"id": "n4", "rack": "r2", "map_slots": 2, "reduce_slots": 2}]},
		"network": {"node_mbps": 10, "oversubscription": 2},
		"jobs": [%s]}`, seed, strings.Join(js, ",\n"))
	sc, err := sim.DecodeClusterScenario(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestHeartbeatDecidesAsTheTable: in the heartbeat, with the cluster's
// reduce slots as the model's, every placement the reduce placer asks of
// mdp-optimal is a request on the model's slots (costs from the model,
// the jobs in service holding disjoint slots of the model) and gets the
// placement simulator's table's decision for it; on these loads some
// decisions are inside the model and some not on the R cheapest slots.
func TestHeartbeatDecidesAsTheTable(t *testing.T) {
	s := scenario(t, solvable[1])
	tab, _ := table(t, s)
	inModel, notCheapest, total := 0, 0, 0
	for seed := range uint64(2) {
		for _, gap := range []float64{3, 8} {
			built, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel()})
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{Placement: built.(*Placement)}
			pipe, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Seed: seed, Placement: rec})
			if err != nil {
				t.Fatal(err)
			}
			sc := heartbeatScenario(t, 14, gap, seed)
			if _, err := sim.RunCluster(context.Background(), sc, pipe, sim.ClusterOptions{Seed: seed}); err != nil {
				t.Fatal(err)
			}
			if len(rec.reqs) != len(sc.Jobs) {
				t.Errorf("seed %d gap %g: %d placements for %d jobs", seed, gap, len(rec.reqs), len(sc.Jobs))
			}
			for k := range rec.reqs {
				req, got := &rec.reqs[k], rec.decs[k]
				checkModelRequest(t, req, s.SlotCosts)
				want, err := tab.Place(req)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Positions, want.Positions) {
					t.Errorf("seed %d gap %g request %d: heartbeat %v, table %v", seed, gap, k, got.Positions, want.Positions)
				}
				total++
				if !strings.Contains(got.Reason, "cheapest free slots") {
					inModel++
				}
				if !slices.Equal(got.Positions, firstR(req.R)) {
					notCheapest++
				}
			}
		}
	}
	t.Logf("%d placements: %d inside the model, %d not on the R cheapest free slots", total, inModel, notCheapest)
	if inModel == 0 || notCheapest == 0 || inModel == total {
		t.Errorf("%d placements, %d inside the model, %d not the cheapest: the loads do not exercise the policy", total, inModel, notCheapest)
	}
}

// checkModelRequest: the free slots are the model's at its costs (or
// further waves of them), cheapest first, and no slot is both free and
// held or held twice.
func checkModelRequest(t *testing.T, req *policy.PlacementRequest, costs []float64) {
	t.Helper()
	seen := map[int]bool{}
	for _, h := range req.Held {
		for _, i := range h {
			if i < 0 || i >= len(costs) || seen[i] {
				t.Fatalf("held %v: slot %d out of the model or held twice", req.Held, i)
			}
			seen[i] = true
		}
	}
	for k, f := range req.Free {
		if seen[f.Index] || f.Cost != costs[f.Index%len(costs)] {
			t.Fatalf("free[%d] = %+v: held, or not at the model's cost", k, f)
		}
		if k > 0 && f.Cost < req.Free[k-1].Cost {
			t.Fatalf("free slots not cheapest first: %+v", req.Free)
		}
		seen[f.Index] = true
	}
}

// TestHeartbeatOtherSlotsPricedByHops: a model of fewer slots than the
// cluster's is not the cluster's: the placer prices by hop distance, and
// the decision's reason says why.
func TestHeartbeatOtherSlotsPricedByHops(t *testing.T) {
	s := scenario(t, solvable[0]) // 6 slots; the cluster has 8
	built, err := policy.NewPlacement(Name, policy.PlacementConfig{Model: s.PlacementModel()})
	if err != nil {
		t.Fatal(err)
	}
	pipe, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Placement: built})
	if err != nil {
		t.Fatal(err)
	}
	sc := heartbeatScenario(t, 3, 5, 1)
	if _, err := sim.RunCluster(context.Background(), sc, pipe, sim.ClusterOptions{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	snap, err := pipe.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap), "the model has 6 slot costs and the cluster 8 reduce slots") {
		t.Errorf("snapshot %s: no reason for the hop-distance costs", snap)
	}
}

// restarted is a control plane whose scheduler's pipeline is rebuilt
// before every heartbeat, from the registry and the last snapshot: a
// server restarted between every two heartbeats.
type restarted struct {
	s     *ledger.Scheduler
	build func() (*policy.Pipeline, error)
	n     int
}

func (r *restarted) Submit(_ context.Context, job ledger.JobSpec) error {
	_, err := r.s.Submit(job)
	return err
}

func (r *restarted) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	data, err := r.s.Pipe.Snapshot()
	if err != nil {
		return nil, err
	}
	fresh, err := r.build()
	if err != nil {
		return nil, err
	}
	if err := fresh.Restore(data); err != nil {
		return nil, err
	}
	r.s.Pipe, r.n = fresh, r.n+1
	return r.s.Heartbeat(ctx, b)
}

func (r *restarted) JobFinished(context.Context, float64, string) error { return nil }

// TestHeartbeatRestartDecidesTheSame: with the pipeline rebuilt and
// restored from its snapshot before every heartbeat (the plans keep the
// model slots they chose, which later requests' held sets read), the run
// is identical to the uninterrupted one.
func TestHeartbeatRestartDecidesTheSame(t *testing.T) {
	// mdp-8slots.json's costs with each node's second slot the cheaper:
	// the held sets then depend on which of a node's slots a plan chose.
	m := scenario(t, solvable[1]).PlacementModel()
	m.SlotCosts = []float64{2, 1, 10, 5, 26, 17, 50, 37}
	build := func() (*policy.Pipeline, error) {
		return policy.NewPlacedPipeline("fifo", Name, policy.HeartbeatConfig{Seed: 2, PlacementModel: m})
	}
	sc := heartbeatScenario(t, 14, 3, 2)
	pipe, err := build()
	if err != nil {
		t.Fatal(err)
	}
	want, err := sim.RunCluster(context.Background(), sc, pipe, sim.ClusterOptions{Seed: 2, Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(sc.LedgerConfig())
	if err != nil {
		t.Fatal(err)
	}
	first, _ := build()
	r := &restarted{s: &ledger.Scheduler{Ledger: l, Pipe: first}, build: build}
	got, err := sim.RunCluster(context.Background(), sc, nil, sim.ClusterOptions{Seed: 2, Explain: true, ControlPlane: r})
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Fatalf("restarted %d times:\n%s\nuninterrupted:\n%s", r.n, gj, wj)
	}
	if !bytes.Contains(wj, []byte("the model's fixed slot costs")) {
		t.Errorf("no veto names the model's slots: the run did not place on them\n%s", wj)
	}
}

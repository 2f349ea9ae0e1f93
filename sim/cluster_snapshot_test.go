package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/policy"
)

// restoring is a ControlPlane that, before each of the first heartbeats
// (when the ITA plan is spent node by node) and a random share of the
// others, replaces the scheduler's pipeline by a fresh one of the same
// spec restored from its Snapshot: what a server restarted between two
// heartbeats does with the policy state it stored.
type restoring struct {
	t        *testing.T
	s        *ledger.Scheduler
	spec     string
	cfg      policy.HeartbeatConfig
	rng      *rand.Rand
	first    int
	share    float64
	beats    int
	restores int
}

func (r *restoring) Submit(_ context.Context, job ledger.JobSpec) error {
	_, err := r.s.Submit(job)
	return err
}

func (r *restoring) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	r.beats++
	if r.beats <= r.first || r.rng.Float64() < r.share {
		data, err := r.s.Pipe.Snapshot()
		if err != nil {
			return nil, err
		}
		fresh, err := policy.NewPipeline(r.spec, r.cfg)
		if err != nil {
			return nil, err
		}
		if err := fresh.Restore(data); err != nil {
			return nil, fmt.Errorf("restoring %s: %w", data, err)
		}
		again, err := fresh.Snapshot()
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(again, data) {
			r.t.Fatalf("a restored pipeline's snapshot differs:\n%s\nfrom\n%s", again, data)
		}
		r.s.Pipe = fresh
		r.restores++
	}
	return r.s.Heartbeat(ctx, b)
}

func (r *restoring) JobFinished(context.Context, float64, string) error { return nil }

// TestPipelineSnapshotRestoresDecisions: every stateful stage (HaSTE's ITA
// plan, DHSA's configured slots, delay scheduling's clocks, SEPB's kills,
// BASE's rates, DynamicAdjust's phase tracks) restored from its snapshot
// at random heartbeats makes exactly the decisions of the stage that never
// stopped: the run's whole output is identical.
func TestPipelineSnapshotRestoresDecisions(t *testing.T) {
	for _, tc := range []struct{ scenario, spec string }{
		{"haste-table2", "haste"},
		{"haste-table4", "haste-a+delay-scheduling"},
		{"dynamicmr-batch-5", "pi-dhsa+sepb+slot-prescheduling"},
		{"stealing-stragglers-2", "fair+resource-stealing-ltm+base"},
		{"stealing-grep-50", "fifo+late+base"},
		{"dynamicadjust-invertedindex", "fifo+dynamic-adjust"},
		{"dynamicadjust-pagerank", "haste+dynamic-adjust+sepb"},
	} {
		t.Run(tc.scenario+"/"+tc.spec, func(t *testing.T) {
			sc, err := BuiltinCluster(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			const seed = 3
			cfg := policy.HeartbeatConfig{Seed: seed}
			pipe, err := policy.NewPipeline(tc.spec, cfg)
			if err != nil {
				t.Fatal(err)
			}
			want, err := RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			l, err := ledger.New(sc.LedgerConfig())
			if err != nil {
				t.Fatal(err)
			}
			fresh, _ := policy.NewPipeline(tc.spec, cfg)
			r := &restoring{t: t, s: &ledger.Scheduler{Ledger: l, Pipe: fresh}, spec: tc.spec, cfg: cfg,
				rng: rand.New(rand.NewPCG(seed, uint64(len(tc.spec)))), first: 30, share: 0.05}
			got, err := RunCluster(context.Background(), sc, nil, ClusterOptions{Seed: seed, ControlPlane: r})
			if err != nil {
				t.Fatal(err)
			}
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			if !bytes.Equal(wj, gj) {
				t.Fatalf("with %d restores:\n%s\nuninterrupted:\n%s", r.restores, gj, wj)
			}
			if r.restores < 10 {
				t.Fatalf("only %d restores", r.restores)
			}
		})
	}
}

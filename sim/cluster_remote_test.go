package sim

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/policy"
)

// ledgerScheduler drives a run through a ledger.Scheduler in process: the
// decision logic of optd's Heartbeat RPC without the network. Every event is
// also replayed into a second ledger, as a restarted server would.
type ledgerScheduler struct {
	s      *ledger.Scheduler
	cfg    ledger.Config
	mirror *ledger.Ledger
}

func (l *ledgerScheduler) record(evs ...ledger.Event) error {
	for _, ev := range evs {
		data, err := ev.Encode()
		if err != nil {
			return err
		}
		back, err := ledger.DecodeEvent(data)
		if err != nil {
			return err
		}
		if err := l.mirror.Replay(back); err != nil {
			return err
		}
	}
	if ev, ok := l.s.Ledger.Snapshot(); ok {
		// What a server does when the cluster is idle: compact the log.
		fresh, err := ledger.New(l.cfg)
		if err != nil {
			return err
		}
		if err := fresh.Replay(ev); err != nil {
			return err
		}
		l.mirror = fresh
	}
	return nil
}

func newLedgerScheduler(t *testing.T, sc *ClusterScenario, spec string, seed uint64) *ledgerScheduler {
	t.Helper()
	cfg := sc.LedgerConfig()
	l, err := ledger.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ledger.New(cfg)
	pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	return &ledgerScheduler{s: &ledger.Scheduler{Ledger: l, Pipe: pipe}, cfg: cfg, mirror: m}
}

type ledgerAdapter struct{ *ledgerScheduler }

func (a ledgerAdapter) JobSubmitted(_ context.Context, _ float64, job ledger.JobSpec) error {
	if err := a.s.Ledger.Submit(job); err != nil {
		return err
	}
	return a.record(ledger.Event{Submit: &job})
}

func (a ledgerAdapter) Heartbeat(ctx context.Context, now float64, node string, running []ledger.Status) (HeartbeatAnswer, error) {
	d, err := a.s.Heartbeat(ctx, ledger.Beat{Node: node, NowS: now, Running: running})
	if err != nil {
		return HeartbeatAnswer{}, err
	}
	ans := HeartbeatAnswer{Rejected: d.Rejected}
	for _, ap := range d.Applied {
		ans.Actions = append(ans.Actions, ap.Action)
		if ap.Kind == policy.ActionStart || ap.Kind == policy.ActionSpeculate {
			ans.Started = append(ans.Started, ap.Attempt)
			// The executor starts what it was told: a copy of Source.
			if ap.Kind == policy.ActionSpeculate {
				ans.Actions[len(ans.Actions)-1].Attempt = ap.Source
			}
		}
	}
	return ans, a.record(d.Events...)
}

func (a ledgerAdapter) AttemptFinished(ctx context.Context, now float64, node string, id int) error {
	d, err := a.s.Heartbeat(ctx, ledger.Beat{Node: node, NowS: now, Finished: []int{id}, ReportOnly: true})
	if err != nil {
		return err
	}
	return a.record(d.Events...)
}

func (a ledgerAdapter) JobFinished(context.Context, float64, string) error { return nil }

// TestLedgerSchedulerReproducesPipeline: a run decided through the ledger
// (the server's state machine) gives exactly the metrics of the same run
// decided by the pipeline on the simulator's own views, for every kind of
// policy, and the event log rebuilds the same ledger.
func TestLedgerSchedulerReproducesPipeline(t *testing.T) {
	cases := []struct{ scenario, spec string }{
		{"haste-table2", "haste"},
		{"haste-table2", "haste-a"},
		{"haste-table3", "drf"},
		{"haste-table3", "fair+resource-stealing-ltm+base"},
		{"dynamicmr-batch-5", "pi-dhsa+sepb+slot-prescheduling"},
		{"dynamicmr-batch-5", "pd-dhsa+delay-scheduling"},
		{"stealing-stragglers-2", "fifo+late"},
		{"stealing-grep-50", "capacity+speculation-hadoop"},
		{"dynamicadjust-invertedindex", "fifo+dynamic-adjust"},
		{"dynamicadjust-pagerank", "ffd-dp"},
	}
	for _, tc := range cases {
		t.Run(tc.scenario+"/"+tc.spec, func(t *testing.T) {
			sc, err := BuiltinCluster(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			const seed = 7
			pipe, err := policy.NewPipeline(tc.spec, policy.HeartbeatConfig{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			want, err := RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			ls := newLedgerScheduler(t, sc, tc.spec, seed)
			got, err := RunCluster(context.Background(), sc, nil, ClusterOptions{Seed: seed, Scheduler: ledgerAdapter{ls}, CheckInvariants: true})
			if err != nil {
				t.Fatal(err)
			}
			wj, _ := json.Marshal(want)
			gj, _ := json.Marshal(got)
			if string(wj) != string(gj) {
				t.Fatalf("through the ledger:\n%s\nin process:\n%s", gj, wj)
			}
			if ls.mirror.Active() != 0 || ls.mirror.Running() != 0 || ls.s.Ledger.Active() != 0 {
				t.Fatalf("after the run: ledger %d active jobs, replayed ledger %d active jobs and %d running attempts",
					ls.s.Ledger.Active(), ls.mirror.Active(), ls.mirror.Running())
			}
			if want.Speculative.Launched+want.Rejected == 0 && tc.spec != "haste" {
				t.Logf("%s: no speculation and no rejection exercised", tc.spec)
			}
		})
	}
}

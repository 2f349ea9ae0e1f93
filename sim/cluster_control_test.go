package sim

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/policy"
)

// ledgerScheduler is a ControlPlane around a ledger.Scheduler that also
// replays every event into a second ledger, as a restarted server would.
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

func (a ledgerAdapter) Submit(_ context.Context, job ledger.JobSpec) error {
	ev, err := a.s.Submit(job)
	if err != nil {
		return err
	}
	return a.record(ev)
}

func (a ledgerAdapter) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	d, err := a.s.Heartbeat(ctx, b)
	if err != nil {
		return nil, err
	}
	return d, a.record(d.Events...)
}

func (a ledgerAdapter) JobFinished(context.Context, float64, string) error { return nil }

// TestEventLogRebuildsTheLedger: a run through a ControlPlane (here the
// ledger.Scheduler the server runs, its events encoded, decoded and
// replayed into a second ledger) gives exactly the metrics of the run in
// process, for every kind of policy, and the event log rebuilds a ledger
// that ends as the live one.
func TestEventLogRebuildsTheLedger(t *testing.T) {
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
			got, err := RunCluster(context.Background(), sc, nil, ClusterOptions{Seed: seed, ControlPlane: ledgerAdapter{ls}, CheckInvariants: true})
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

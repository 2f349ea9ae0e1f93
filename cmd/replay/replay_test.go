package replay

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/simulate"
	"github.com/optd/optd/ledger"
	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/server"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/store"
)

// startServer runs optd's services on a loopback port over the store in
// dir and returns the address and a stop function.
func startServer(t *testing.T, dir string) (addr string, stop func()) {
	t.Helper()
	st, err := store.Open(filepath.Join(dir, "optd.db"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := server.NewClusterService(st, server.Limits{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Listen: "127.0.0.1:0", DataDir: dir, ShutdownTimeout: 5 * time.Second,
		Register: []func(grpc.ServiceRegistrar){cs.Register}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("server: %v", err)
		}
		st.Close()
	}
	t.Cleanup(stop)
	return srv.Addr().String(), stop
}

func runOptd(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := cli.RunCaptured(t.Context(), args, simulate.NewCommand, NewCommand)
	if code != 0 {
		t.Fatalf("optd %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// TestReplayEqualsSimulate is the reference executor's contract: driving
// the simulated cluster through the gRPC API gives exactly the output of
// `optd simulate` with the same scenario, policy and seed, for policies of
// every kind (ITA, slot borrowing, speculation, resource sharing).
func TestReplayEqualsSimulate(t *testing.T) {
	addr, _ := startServer(t, t.TempDir())
	for _, tc := range []struct{ scenario, spec, seed string }{
		{"haste-table2", "haste-a", "1"},
		{"haste-table2", "haste", "3"},
		{"dynamicmr-batch-5", "pi-dhsa+sepb+slot-prescheduling", "2"},
		{"stealing-stragglers-2", "fair+late", "1"},
		{"stealing-grep-50", "drf+resource-stealing-ltm+base", "5"},
		{"dynamicadjust-pagerank", "fifo+dynamic-adjust", "1"},
	} {
		t.Run(tc.scenario+"/"+tc.spec, func(t *testing.T) {
			want := runOptd(t, "simulate", "--scenario", tc.scenario, "--policy", tc.spec, "--seed", tc.seed)
			got := runOptd(t, "replay", "--server", addr, "--scenario", tc.scenario, "--policy", tc.spec, "--seed", tc.seed)
			if got != want {
				t.Fatalf("replay through %s:\n%s\nsimulate:\n%s", addr, got, want)
			}
		})
	}
}

// restarting wraps the executor and restarts the server before every
// `every`-th heartbeat: the cluster's ledger is rebuilt from its durable event log
// each time.
type restarting struct {
	*executor
	t        *testing.T
	dir      string
	every    int
	stop     func()
	conn     *grpc.ClientConn
	restarts int
	beats    int
}

func (r *restarting) maybeRestart() {
	r.beats++
	if r.beats%r.every != 0 {
		return
	}
	r.conn.Close()
	r.stop()
	addr, stop := startServer(r.t, r.dir)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		r.t.Fatal(err)
	}
	r.stop, r.conn, r.client = stop, conn, optdv1.NewClusterServiceClient(conn)
	r.restarts++
}

func (r *restarting) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	if !b.ReportOnly {
		r.maybeRestart()
	}
	return r.executor.Heartbeat(ctx, b)
}

// TestReplaySurvivesRestarts: with a policy that keeps no state of its own
// (FIFO, Fair, DRF decide from the ledger alone), restarting the server
// every 300 heartbeats changes nothing in the replay's outcome.
func TestReplaySurvivesRestarts(t *testing.T) {
	for _, tc := range []struct{ scenario, spec string }{
		{"haste-table3", "drf"},
		{"dynamicmr-batch-5", "fair"},
	} {
		t.Run(tc.scenario+"/"+tc.spec, func(t *testing.T) {
			sc, err := simulate.LoadScenario(tc.scenario)
			if err != nil {
				t.Fatal(err)
			}
			pipe, err := policy.NewPipeline(tc.spec, policy.HeartbeatConfig{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			want, err := sim.RunCluster(t.Context(), sc, pipe, sim.ClusterOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			addr, stop := startServer(t, dir)
			conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			cfg := sc.LedgerConfig()
			x := &executor{client: optdv1.NewClusterServiceClient(conn), cluster: "r", resources: cfg.Cluster.Resources}
			if _, err := x.client.RegisterCluster(t.Context(), registerRequest("r", cfg, tc.spec, 1)); err != nil {
				t.Fatal(err)
			}
			r := &restarting{executor: x, t: t, dir: dir, every: 300, stop: stop, conn: conn}
			defer func() { r.conn.Close() }()
			got, err := sim.RunCluster(t.Context(), sc, nil, sim.ClusterOptions{Seed: 1, ControlPlane: r})
			if err != nil {
				t.Fatal(err)
			}
			if r.restarts < 3 {
				t.Fatalf("only %d restarts in %d calls", r.restarts, x.calls)
			}
			if got.MakespanS != want.MakespanS || got.MeanResponseS != want.MeanResponseS || got.Events != want.Events {
				t.Fatalf("with %d restarts: makespan %v, response %v, events %d; in process %v, %v, %d",
					r.restarts, got.MakespanS, got.MeanResponseS, got.Events, want.MakespanS, want.MeanResponseS, want.Events)
			}
		})
	}
}

// TestReplayErrors: an unreachable server and a bad policy fail with a
// message naming them.
func TestReplayErrors(t *testing.T) {
	addr, _ := startServer(t, t.TempDir())
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo+nope"}, "fifo+nope"},
		{[]string{"--server", addr, "--scenario", "no-such-scenario", "--policy", "fifo"}, "no-such-scenario"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--tls-ca", "/nonexistent.pem"}, "--tls-ca"},
	} {
		_, errOut, code := cli.RunCaptured(t.Context(), append([]string{"replay"}, tc.args...), NewCommand)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("optd replay %v: exit %d, stderr %q; want an error naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

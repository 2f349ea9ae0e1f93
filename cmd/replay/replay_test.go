package replay

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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

func init() { cli.QuietPlainProgress() } // stderr is checked empty

// startServer runs optd's services on a loopback port over the store in
// dir and returns the address and a stop function.
func startServer(t *testing.T, dir string) (addr string, stop func()) {
	t.Helper()
	st, err := store.Open(dir, 5*time.Second)
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

// earlyReducers is a scenario whose reducers, started at slow start 0
// without ramp-up, fill both nodes while maps wait: it ends only because
// the scheduler preempts them.
const earlyReducers = "../simulate/testdata/early-reducers.json"

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
// every kind (ITA, slot borrowing, speculation, resource sharing), and
// with --explain the same vetoes.
// placementModel is the queueing model the model-based placement policies
// are built on in these tests.
const placementModel = "../../examples/placement-scenario.json"

// fig10Model is a queueing model whose 30 slots are tan-fig10-sort's reduce
// slots (per-slot costs 1-5), on which mdp-optimal places in the heartbeat.
const fig10Model = "../../sim/testdata/scenarios/tan-fig10-model.json"

func TestReplayEqualsSimulate(t *testing.T) {
	addr, _ := startServer(t, t.TempDir())
	for _, tc := range []struct{ scenario, spec, seed, explain, placement, model string }{
		{"haste-table2", "haste-a", "1", "", "", ""},
		{"haste-table2", "haste", "3", "", "", ""},
		{"dynamicmr-batch-5", "pi-dhsa+sepb+slot-prescheduling", "2", "", "", ""},
		{"stealing-stragglers-2", "fair+late", "1", "", "", ""},
		{"stealing-grep-50", "drf+resource-stealing-ltm+base", "5", "", "", ""},
		{"dynamicadjust-pagerank", "fifo+dynamic-adjust", "1", "", "", ""},
		{"stealing-stragglers-2", "fair+delay-scheduling+base", "1", "--explain", "", ""},
		{"stealing-grep-50", "mrv1-static+delay-scheduling+load-balance+sepb", "2", "--explain", "", ""},
		// Reducers placed in the pipeline, on the network's scenarios.
		{"tan-fig10-sort", "fair", "2", "--explain", "receding-horizon", ""},
		{"tan-fig3-sort", "fair+delay-scheduling", "1", "--explain", "greedy", ""},
		{"haste-table2", "haste-a", "1", "", "random", ""},
		// A family's parameters, and the policies built on the cluster's
		// queueing model (--placement-model).
		{"tan-fig10-sort", "fair", "1", "", "state-threshold:base=2;ratio=0.3", ""},
		{"tan-fig10-sort", "fair", "2", "", "adp-bid-price:fit_steps=5;fit_jobs=200", placementModel},
		{"tan-fig3-sort", "fair", "1", "", "rollout:samples=4;horizon=10", placementModel},
		// The MDP's optimal table on the model's fixed slot costs.
		{"tan-fig10-sort", "fair", "1", "--explain", "mdp-optimal", fig10Model},
		// Reducers that start at slow start 0 without ramp-up deadlock
		// with waiting maps; the server preempts them as the simulator
		// does.
		{earlyReducers, "fair", "1", "--explain", "", ""},
		{earlyReducers, "fifo", "2", "", "", ""},
	} {
		t.Run(tc.scenario+"/"+tc.spec+"/"+tc.placement, func(t *testing.T) {
			args := []string{"--scenario", tc.scenario, "--policy", tc.spec, "--seed", tc.seed}
			if tc.explain != "" {
				args = append(args, tc.explain)
			}
			if tc.placement != "" {
				args = append(args, "--placement", tc.placement)
			}
			if tc.model != "" {
				args = append(args, "--placement-model", tc.model)
			}
			want := runOptd(t, append([]string{"simulate"}, args...)...)
			if tc.scenario == earlyReducers && !strings.Contains(want, `"preempted_reducers"`) {
				t.Fatalf("%s preempted no reducer:\n%s", tc.scenario, want)
			}
			got := runOptd(t, append([]string{"replay", "--server", addr}, args...)...)
			if got != want {
				t.Fatalf("replay through %s:\n%s\nsimulate:\n%s", addr, got, want)
			}
			if ids := listClusters(t, addr); len(ids) != 0 {
				t.Errorf("replay left clusters %v behind", ids)
			}
		})
	}
}

// restarting wraps the executor and restarts the server (a graceful stop,
// then a new server on the same data directory) before random calls: each
// time, the cluster's ledger is rebuilt from its durable event log and its
// pipeline restored from its stored snapshot. After a restart it re-reports
// every node's running attempts with their last reported progress, as a
// NodeManager resyncs with a restarted ResourceManager: progress is soft
// state, which the server does not make durable.
type restarting struct {
	*executor
	t        *testing.T
	dir      string
	rng      *rand.Rand
	share    float64
	stop     func()
	conn     *grpc.ClientConn
	restarts int
	// status is the last reported status of each attempt still running,
	// node the node it runs on, task its task.
	status map[int]ledger.Status
	node   map[int]string
	task   map[int]policy.TaskKey
	lastS  map[string]float64
}

func (r *restarting) maybeRestart(ctx context.Context) error {
	if r.rng.Float64() >= r.share {
		return nil
	}
	r.conn.Close()
	r.stop()
	addr, stop := startServer(r.t, r.dir)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	r.stop, r.conn, r.client = stop, conn, optdv1.NewClusterServiceClient(conn)
	r.restarts++
	byNode := map[string][]ledger.Status{}
	for id, st := range r.status {
		byNode[r.node[id]] = append(byNode[r.node[id]], st)
	}
	for _, n := range slices.Sorted(maps.Keys(byNode)) {
		sts := byNode[n]
		slices.SortFunc(sts, func(a, b ledger.Status) int { return cmp.Compare(a.Attempt, b.Attempt) })
		if _, err := r.executor.Heartbeat(ctx, ledger.Beat{Node: n, NowS: r.lastS[n], Running: sts, ReportOnly: true}); err != nil {
			return fmt.Errorf("resync of node %s: %w", n, err)
		}
	}
	return nil
}

func (r *restarting) Submit(ctx context.Context, job ledger.JobSpec) error {
	if err := r.maybeRestart(ctx); err != nil {
		return err
	}
	return r.executor.Submit(ctx, job)
}

func (r *restarting) JobFinished(ctx context.Context, now float64, job string) error {
	if err := r.maybeRestart(ctx); err != nil {
		return err
	}
	return r.executor.JobFinished(ctx, now, job)
}

// drop forgets an attempt that no longer runs.
func (r *restarting) drop(id int) {
	delete(r.status, id)
	delete(r.node, id)
	delete(r.task, id)
}

func (r *restarting) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	if err := r.maybeRestart(ctx); err != nil {
		return nil, err
	}
	d, err := r.executor.Heartbeat(ctx, b)
	if err != nil {
		return nil, err
	}
	r.lastS[b.Node] = b.NowS
	for _, st := range b.Running {
		r.status[st.Attempt] = st
	}
	for _, id := range b.Finished { // the task's other attempts are killed
		k := r.task[id]
		for other, ok := range r.task {
			if ok == k {
				r.drop(other)
			}
		}
	}
	for _, id := range b.Failed {
		r.drop(id)
	}
	for _, a := range d.Applied {
		switch a.Kind {
		case policy.ActionStart, policy.ActionSpeculate:
			r.node[a.Attempt], r.task[a.Attempt] = b.Node, policy.TaskKey{Job: a.Job, Type: a.Type, Task: a.Task}
		case policy.ActionKill:
			r.drop(a.Attempt)
		}
	}
	return d, nil
}

// TestReplaySurvivesRestarts: restarting the server at random points of a
// replay (before about one call in 60) changes nothing in its output: the
// ledger is rebuilt from its events and the stages that learn (HaSTE's ITA
// plan, DHSA's slots, delay scheduling's clocks, SEPB's kills, BASE's
// rates, DynamicAdjust's phase tracks, the reduce placer's plans, its
// estimator and random placement's generator) are restored from their snapshots,
// so the output is byte-identical to optd simulate's.
func TestReplaySurvivesRestarts(t *testing.T) {
	for _, tc := range []struct{ scenario, spec, placement, model string }{
		{"haste-table2", "haste+delay-scheduling", "", ""},
		{"dynamicmr-batch-5", "pi-dhsa+sepb+load-balance", "", ""},
		{"stealing-stragglers-4", "capacity+resource-stealing-stm+base", "", ""},
		{"stealing-stragglers-2", "fifo+dynamic-adjust+late", "", ""},
		// The placement's plans and its estimator survive restarts.
		{"tan-fig10-sort", "fair", "receding-horizon", ""},
		// So does random placement's generator.
		{"tan-fig10-sort", "fair", "random", ""},
		// And the policy built on the model decides as before a restart.
		{"tan-fig10-sort", "fair", "rollout:samples=4;horizon=10", placementModel},
		// And the MDP's table on the model's slots, whose plans name them.
		{"tan-fig10-sort", "fair", "mdp-optimal", fig10Model},
		// Preemption decided on a ledger rebuilt from its events.
		{earlyReducers, "fair", "", ""},
	} {
		t.Run(tc.scenario+"/"+tc.spec+"/"+tc.placement, func(t *testing.T) {
			args := []string{"simulate", "--scenario", tc.scenario, "--policy", tc.spec, "--seed", "1"}
			if tc.placement != "" {
				args = append(args, "--placement", tc.placement)
			}
			if tc.model != "" {
				args = append(args, "--placement-model", tc.model)
			}
			want := runOptd(t, args...)
			placement, err := placementPolicy(options{placement: tc.placement, placementModel: tc.model, seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			sc, err := simulate.LoadScenario(tc.scenario)
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
			if _, err := x.client.RegisterCluster(t.Context(), registerRequest("r", cfg, tc.spec, placement, 1)); err != nil {
				t.Fatal(err)
			}
			r := &restarting{executor: x, t: t, dir: dir, rng: rand.New(rand.NewPCG(1, uint64(len(tc.spec)))), share: 1.0 / 60,
				stop: stop, conn: conn, status: map[int]ledger.Status{}, node: map[int]string{}, task: map[int]policy.TaskKey{}, lastS: map[string]float64{}}
			defer func() { r.conn.Close() }()
			res, err := sim.RunCluster(t.Context(), sc, nil, sim.ClusterOptions{Seed: 1, ControlPlane: r})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := cli.WriteJSON(&out, simulate.Output{Scenario: sc.Name, Policy: tc.spec, Placement: tc.placement, Seed: 1, ClusterResult: res}); err != nil {
				t.Fatal(err)
			}
			if r.restarts < 5 {
				t.Fatalf("only %d restarts in %d calls", r.restarts, x.calls)
			}
			if out.String() != want {
				t.Fatalf("with %d restarts in %d calls:\n%s\nsimulate:\n%s", r.restarts, x.calls, out.String(), want)
			}
			t.Logf("%d restarts in %d calls", r.restarts, x.calls)
		})
	}
}

// TestReplayErrors: an unreachable server and a bad policy fail with a
// message naming them.
func TestReplayErrors(t *testing.T) {
	addr, _ := startServer(t, t.TempDir())
	// Fig. 10's model with an unlimited waiting room, which the MDP
	// cannot have.
	unlimited := filepath.Join(t.TempDir(), "unlimited.json")
	data, err := os.ReadFile(fig10Model)
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"max_waiting": 1,`), nil, 1)
	data = bytes.Replace(data, []byte(`"arrival_rate": 0.0167`), []byte(`"arrival_rate": 0.001`), 1)
	if err := os.WriteFile(unlimited, data, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo+nope"}, "fifo+nope"},
		{[]string{"--server", addr, "--scenario", "no-such-scenario", "--policy", "fifo"}, "no-such-scenario"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--tls-ca", "/nonexistent.pem"}, "--tls-ca"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--progress", "loud"}, `--progress = "loud"`},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--placement-model", placementModel}, "give --placement too"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--placement", "rollout", "--placement-model", "/nonexistent.json"}, "--placement-model"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--placement", "rollout"}, "rollout needs the cluster's queueing model"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--placement", "rollout:samples=0", "--placement-model", placementModel}, "samples = 0"},
		{[]string{"--server", addr, "--scenario", "haste-table2", "--policy", "fifo", "--placement", "greedy:x"}, "is not name=value"},
		// The MDP policy's limits and model, refused by the server with
		// the parameter or the field.
		{[]string{"--server", addr, "--scenario", "tan-fig10-sort", "--policy", "fair", "--placement", "mdp-optimal:max_states=10", "--placement-model", fig10Model}, "max_states = 10"},
		{[]string{"--server", addr, "--scenario", "tan-fig10-sort", "--policy", "fair", "--placement", "mdp-optimal"}, "mdp-optimal needs the cluster's queueing model"},
		{[]string{"--server", addr, "--scenario", "tan-fig10-sort", "--policy", "fair", "--placement", "mdp-optimal", "--placement-model", unlimited}, "model.max_waiting = -1"},
	} {
		_, errOut, code := cli.RunCaptured(t.Context(), append([]string{"replay"}, tc.args...), NewCommand)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("optd replay %v: exit %d, stderr %q; want an error naming %q", tc.args, code, errOut, tc.want)
		}
	}
}

// listClusters lists the server's clusters.
func listClusters(t *testing.T, addr string) []string {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r, err := optdv1.NewClusterServiceClient(conn).ListClusters(t.Context(), &optdv1.ListClustersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range r.GetClusters() {
		ids = append(ids, c.GetClusterId())
	}
	return ids
}

package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/models/trace"
	"github.com/optd/optd/policy"
)

// netCluster is a cluster of racks×perRack nodes named n<rack>-<i>.
func netCluster(racks, perRack int) *models.Cluster {
	c := &models.Cluster{}
	for r := range racks {
		for i := range perRack {
			c.Nodes = append(c.Nodes, models.Node{ID: fmt.Sprintf("n%d-%d", r, i), Rack: fmt.Sprintf("r%d", r)})
		}
	}
	return c
}

// owner is a stand-in reduce attempt on node dst.
func owner(id, dst int) *simAttempt { return &simAttempt{id: id, node: &simNode{idx: dst}} }

// drain runs the flows to completion as the simulator does (rates
// recomputed at every completion) and returns each flow's completion time
// by owner id.
func drain(t *testing.T, fn *flowNet) map[int]float64 {
	t.Helper()
	out := map[int]float64{}
	for steps := 0; len(fn.flows) > 0; steps++ {
		if steps > 10000 {
			t.Fatal("flows never complete")
		}
		fn.allocate()
		now := fn.nextDone()
		if math.IsInf(now, 1) {
			t.Fatalf("%d flows without rate", len(fn.flows))
		}
		for _, f := range fn.done(now) {
			fn.drop(now, f)
			out[f.owner.id] = now
		}
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// One flow inside a rack runs at the node link's capacity: X/C.
func TestNetworkOneFlow(t *testing.T) {
	for _, c := range []float64{1, 125, 1250} {
		for _, mb := range []float64{0.5, 128, 1e5} {
			fn := newFlowNet(&Network{NodeMBps: c, Oversubscription: 4}, netCluster(1, 3))
			fn.add(0, 0, owner(1, 2), mb)
			if got := drain(t, fn)[1]; !near(got, mb/c) {
				t.Errorf("C=%v X=%v: done at %v, want X/C = %v", c, mb, got, mb/c)
			}
		}
	}
}

// n flows into one node share its link: the k-th smallest of sizes
// x_1 ≤ … ≤ x_n ends at t_k = t_{k−1} + (n−k+1)(x_k − x_{k−1})/C.
func TestNetworkFlowsShareOneLink(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := NewRand(seed, 0)
		n := 1 + rng.IntN(12)
		c := 10 + 100*rng.Float64()
		fn := newFlowNet(&Network{NodeMBps: c, Oversubscription: 1}, netCluster(1, n+1))
		sizes := make([]float64, n)
		for i := range sizes {
			sizes[i] = 1 + 500*rng.Float64()
			fn.add(0, i+1, owner(i, 0), sizes[i]) // node i+1 → node 0
		}
		got := drain(t, fn)
		sorted := slices.Clone(sizes)
		slices.Sort(sorted)
		want, prev := map[float64]float64{}, 0.0
		tk := 0.0
		for k, x := range sorted {
			tk += float64(n-k) * (x - prev) / c
			prev = x
			want[x] = tk
		}
		for i, x := range sizes {
			if !near(got[i], want[x]) {
				t.Errorf("seed %d: n=%d C=%.3g flow of %.4g MB done at %v, want %v", seed, n, c, x, got[i], want[x])
			}
		}
	}
}

// m flows from m nodes of one rack to m nodes of another cross an uplink
// of m·C/o: each gets C/o (the node links are not the bottleneck).
func TestNetworkOversubscribedUplink(t *testing.T) {
	for _, m := range []int{1, 2, 5, 10} {
		for _, o := range []float64{1, 2, 4, 10} {
			c := 125.0
			fn := newFlowNet(&Network{NodeMBps: c, Oversubscription: o}, netCluster(2, m))
			for i := range m {
				fn.add(0, i, owner(i, m+i), 100)
			}
			fn.allocate()
			for _, f := range fn.flows {
				if !near(f.rate, c/o) {
					t.Errorf("m=%d o=%v: rate %v, want C/o = %v", m, o, f.rate, c/o)
				}
			}
			if got := drain(t, fn)[0]; !near(got, 100*o/c) {
				t.Errorf("m=%d o=%v: done at %v, want %v", m, o, got, 100*o/c)
			}
		}
	}
}

// Racks with unequal uplinks (RackOversubscription): m flows from rack r0
// (at o0:1) to rack r1 (at o1:1), one per node pair, share the tighter of
// the two uplinks: each gets C/max(o0, o1). Checked for every pair of
// ratios, r0's set by the override and r1's by the default.
func TestNetworkUnequalRackUplinks(t *testing.T) {
	c := 125.0
	for _, m := range []int{1, 3, 8} {
		for _, o0 := range []float64{1, 2, 10} {
			for _, o1 := range []float64{1, 4, 10} {
				nw := &Network{NodeMBps: c, Oversubscription: o1, RackOversubscription: map[string]float64{"r0": o0}}
				fn := newFlowNet(nw, netCluster(2, m))
				for i := range m {
					fn.add(0, i, owner(i, m+i), 100)
				}
				fn.allocate()
				want := c / max(o0, o1)
				for _, f := range fn.flows {
					if !near(f.rate, want) {
						t.Errorf("m=%d r0 %v:1, r1 %v:1: rate %v, want C/max = %v", m, o0, o1, f.rate, want)
					}
				}
				if got := drain(t, fn)[0]; !near(got, 100/want) {
					t.Errorf("m=%d r0 %v:1, r1 %v:1: done at %v, want %v", m, o0, o1, got, 100/want)
				}
			}
		}
	}
}

// A rack_oversubscription naming no rack, or below 1, is refused with its
// field path.
func TestNetworkRackOversubscriptionValidated(t *testing.T) {
	for _, c := range []struct {
		racks map[string]float64
		want  string
	}{
		{map[string]float64{"nowhere": 2}, `network.rack_oversubscription["nowhere"]`},
		{map[string]float64{"r1": 0.5}, `network.rack_oversubscription["r1"]`},
		{map[string]float64{"r1": math.Inf(1)}, `network.rack_oversubscription["r1"]`},
		{map[string]float64{"r1": math.NaN()}, `network.rack_oversubscription["r1"]`},
	} {
		sc := TanFig10Scenario()
		sc.Network.RackOversubscription = c.racks
		err := sc.withDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.racks, err, c.want)
		}
	}
	sc := TanFig10Scenario()
	sc.Network.RackOversubscription = map[string]float64{"rack1": 1, "rack3": 20}
	if err := sc.withDefaults().Validate(); err != nil {
		t.Errorf("valid racks refused: %v", err)
	}
}

// Two bottlenecks: node 0's link up carries flows a (0→1) and b (0→2);
// node 2's link down carries b and c, d, e (3, 4, 5 → 2). Node 2's link
// is the tighter one (4 flows): b, c, d, e get C/4; then a gets what
// node 0's link has left, C − C/4 = 3C/4.
func TestNetworkMaxMinTwoBottlenecks(t *testing.T) {
	c := 100.0
	fn := newFlowNet(&Network{NodeMBps: c, Oversubscription: 1}, netCluster(1, 6))
	fn.add(0, 0, owner(0, 1), 1) // a
	fn.add(0, 0, owner(1, 2), 1) // b
	for i := 3; i <= 5; i++ {
		fn.add(0, i, owner(i-1, 2), 1) // c, d, e
	}
	fn.allocate()
	want := []float64{3 * c / 4, c / 4, c / 4, c / 4, c / 4}
	for i, f := range fn.flows {
		if !near(f.rate, want[i]) {
			t.Errorf("flow %d: rate %v, want %v", i, f.rate, want[i])
		}
	}
}

// On random topologies and flows, the allocation is feasible and max-min
// fair: every flow crosses a saturated link on which no flow has a higher
// rate (the bottleneck characterization, Bertsekas and Gallager §6.5.2),
// a second method that does not fill progressively.
func TestNetworkMaxMinProperty(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := NewRand(seed, 1)
		racks, per := 1+rng.IntN(4), 1+rng.IntN(5)
		o := 1 + 9*rng.Float64()
		fn := newFlowNet(&Network{NodeMBps: 10 + 100*rng.Float64(), Oversubscription: o}, netCluster(racks, per))
		nodes := racks * per
		if nodes < 2 {
			continue
		}
		for k := range rng.IntN(40) {
			src, dst := rng.IntN(nodes), rng.IntN(nodes)
			if src == dst {
				continue
			}
			fn.add(0, src, owner(k, dst), 1)
		}
		fn.allocate()
		load := make([]float64, len(fn.caps))
		top := make([]float64, len(fn.caps))
		for _, f := range fn.flows {
			for _, l := range f.path[:f.hops] {
				load[l] += f.rate
				top[l] = math.Max(top[l], f.rate)
			}
		}
		for l, c := range fn.caps {
			if load[l] > c*(1+1e-9) {
				t.Fatalf("seed %d: link %d carries %v > capacity %v", seed, l, load[l], c)
			}
		}
		for _, f := range fn.flows {
			ok := false
			for _, l := range f.path[:f.hops] {
				if load[l] >= fn.caps[l]*(1-1e-9) && f.rate >= top[l]*(1-1e-9) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("seed %d: %v has no bottleneck link", seed, f)
			}
		}
	}
}

// With the network on, runs keep every invariant, are deterministic per
// seed, move at most the map outputs (less the local reads), and cross
// racks only on a multi-rack cluster.
func TestClusterNetworkRuns(t *testing.T) {
	for _, name := range []string{"haste-table2", "dynamicmr-sort", "stealing-stragglers-2"} {
		base, err := BuiltinCluster(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, nw := range []*Network{{}, {NodeMBps: 10, Oversubscription: 5}} {
			sc := *base
			sc.Network = nw
			run := func(seed uint64) *ClusterResult { return runCluster(t, &sc, "fair", seed) }
			a, b := run(3), run(3)
			if fmt.Sprint(a.Jobs, *a.Shuffle) != fmt.Sprint(b.Jobs, *b.Shuffle) {
				t.Errorf("%s: two runs of seed 3 differ", name)
			}
			total := 0.0
			for _, j := range sc.withDefaults().Jobs {
				if j.Reduces > 0 {
					total += float64(j.Maps*j.Stages) * j.MapOutputMB
				}
			}
			if (a.Shuffle.NetworkMB <= 0) != (total == 0) || a.Shuffle.NetworkMB > total*(1+1e-9) || a.Shuffle.CrossRackMB > a.Shuffle.NetworkMB*(1+1e-9) {
				t.Errorf("%s: shuffle %+v of %v MB of map output", name, *a.Shuffle, total)
			}
			if len(sc.Cluster.Racks()) == 1 && a.Shuffle.CrossRackMB != 0 {
				t.Errorf("%s: one rack, %v MB crossed racks", name, a.Shuffle.CrossRackMB)
			}
		}
	}
}

// TestClusterLowerBoundWithNetwork: on random scenarios with the network
// on (random link speeds, oversubscription and map outputs), the lower
// bound stays at or below every run, with reducers placed anywhere or by
// a placement policy, and is not vacuous; its shuffle term raises it on
// some of them.
func TestClusterLowerBoundWithNetwork(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	raised := 0
	for k := range 20 {
		sc := randomBoundScenario(rng, k%2 == 1)
		sc.Network = &Network{NodeMBps: 1 + 200*rng.Float64(), Oversubscription: 1 + 9*rng.Float64()}
		for i := range sc.Jobs {
			sc.Jobs[i].MapOutputMB = 1 + 500*rng.Float64()
		}
		// The shuffle term (B7) raised the bound: without it (an
		// infinitely fast network), a job's critical path counts only
		// its longest map.
		if b, err := ClusterLowerBound(sc, ClusterBoundOptions{Seed: 1}); err == nil {
			slow := *sc
			slow.Network = &Network{NodeMBps: 1e12}
			if fast, err := ClusterLowerBound(&slow, ClusterBoundOptions{Seed: 1}); err == nil && b.JobResponseS > fast.JobResponseS*(1+1e-9) {
				raised++
			}
		}
		for seed := uint64(1); seed <= 2; seed++ {
			for _, pl := range []string{"", "greedy", "costliest", "random"} {
				cfg := policy.HeartbeatConfig{Seed: seed}
				if pl != "" {
					p, err := policy.NewPlacement(pl, policy.PlacementConfig{Seed: seed})
					if err != nil {
						t.Fatal(err)
					}
					cfg.Placement = p
				}
				pipe, err := policy.NewPipeline("fair", cfg)
				if err != nil {
					t.Fatal(err)
				}
				r, err := RunCluster(t.Context(), sc, pipe, ClusterOptions{Seed: seed, CheckInvariants: true})
				if err != nil {
					t.Fatalf("scenario %d placement %q: %v", k, pl, err)
				}
				b, err := ClusterLowerBound(sc, BoundOptionsFor(pipe, seed))
				if err != nil {
					t.Fatal(err)
				}
				if !(b.MakespanS > 0) || b.MakespanS > r.MakespanS+boundSlack(r.MakespanS) || b.MeanResponseS > r.MeanResponseS+boundSlack(r.MeanResponseS) {
					t.Errorf("scenario %d seed %d placement %q: bound %+v, run makespan %.9g s, mean response %.9g s", k, seed, pl, b, r.MakespanS, r.MeanResponseS)
				}
			}
		}
	}
	if raised == 0 {
		t.Error("the shuffle term raised the jobs' critical paths in no scenario")
	}
	t.Logf("the shuffle term raised the jobs' critical paths in %d of 20 scenarios", raised)
}

// TestClusterLowerBoundShuffle: the shuffle term (B7) by hand. Eight maps
// of work w on nodes of one map and one reduce slot (S = 2 maps at once),
// one reducer fetching X MB of each remote map's output over C MB/s: with
// k maps on the reducer's node, T_sh = max(⌈k/2⌉·w, w + (8−k)·X/C), least
// at k = 4..6 (30 s for w = 10, X/C = 5), so the stage lasts at least
// 30 s + (1−φ)·r, where without the term the bound had only the longest
// map (10 s). The bound stays below every placement's run.
func TestClusterLowerBoundShuffle(t *testing.T) {
	const w, x, c, r = 10.0, 50.0, 10.0, 9.0
	sc := &ClusterScenario{Name: "shuffle-bound", Network: &Network{NodeMBps: c}}
	for i := range 4 {
		sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: fmt.Sprint("n", i), Rack: fmt.Sprint("r", i%2), MapSlots: 1, ReduceSlots: 1})
	}
	sc.Jobs = []ClusterJob{{ID: "j", Maps: 8, Reduces: 1, MapWorks: slices.Repeat([]float64{w}, 8), ReduceWorks: []float64{r}, MapOutputMB: x}}
	b, err := ClusterLowerBound(sc, ClusterBoundOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := 30 + (1-DefaultShuffleFraction)*r
	if !near(b.CriticalPathMakespanS, want) {
		t.Fatalf("critical path %v, want T_sh + (1−φ)r = %v", b.CriticalPathMakespanS, want)
	}
	for _, pl := range []string{"", "greedy", "costliest", "random"} {
		for seed := uint64(1); seed <= 3; seed++ {
			p, err := policy.NewPlacedPipeline("fifo", pl, policy.HeartbeatConfig{Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			res, err := RunCluster(t.Context(), sc, p, ClusterOptions{Seed: seed, CheckInvariants: true})
			if err != nil {
				t.Fatal(err)
			}
			if b.MakespanS > res.MakespanS+boundSlack(res.MakespanS) {
				t.Errorf("placement %q seed %d: bound %v above the run's makespan %v", pl, seed, b.MakespanS, res.MakespanS)
			}
		}
	}
}

// TestClusterNetworkClosedForm: one map (input on node a) writes X MB, and
// its one reducer fetches it over a node link of C MB/s when placed on the
// other node (costliest) or reads it locally (greedy), then computes
// (1 − φ)·w. With heartbeats at 0, 0.5, 1, … (a at whole seconds, b half
// past), the map runs on a over [0, m]; the reducer starts at b's next
// heartbeat and ends at m + 0.5 + X/C + (1 − φ)·w, or on a at m (or m + 1)
// plus (1 − φ)·w. The phases agree: the map ends at m, the remote
// reducer's shuffle at m + 0.5 + X/C.
func TestClusterNetworkClosedForm(t *testing.T) {
	for _, c := range []struct{ m, w, x, mbps float64 }{{10, 30, 100, 10}, {4, 9, 50, 125}, {7, 3, 1000, 20}} {
		sc := &ClusterScenario{Name: "closed-form", SlowStart: 1, Replicas: 1, Network: &Network{NodeMBps: c.mbps}}
		for _, id := range []string{"a", "b"} {
			sc.Cluster.Nodes = append(sc.Cluster.Nodes, models.Node{ID: id, Rack: "r", MapSlots: 1, ReduceSlots: 1})
		}
		sc.Jobs = []ClusterJob{{ID: "j", Maps: 1, Reduces: 1, MapWorks: []float64{c.m}, ReduceWorks: []float64{c.w}, MapOutputMB: c.x}}
		compute := (1 - DefaultShuffleFraction) * c.w
		for _, pl := range []string{"costliest", "greedy"} {
			var done float64
			var job JobOutcome
			for seed := uint64(1); seed <= 10; seed++ {
				p, err := policy.NewPlacedPipeline("fifo", pl, policy.HeartbeatConfig{Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				r, err := RunCluster(t.Context(), sc, p, ClusterOptions{Seed: seed, CheckInvariants: true})
				if err != nil {
					t.Fatal(err)
				}
				if r.Locality.NodeLocal != 1 {
					continue // the block's replica was drawn on b: another layout
				}
				done, job = r.Jobs[0].FinishS, r.Jobs[0]
				break
			}
			switch remote := c.m + 0.5 + c.x/c.mbps + compute; pl {
			case "costliest":
				if !near(done, remote) {
					t.Errorf("%+v: the remote reducer ends at %v, want m + 0.5 + X/C + (1−φ)w = %v", c, done, remote)
				}
				if !near(job.MapsEndS, c.m) || !near(job.ShuffleEndS, c.m+0.5+c.x/c.mbps) {
					t.Errorf("%+v: maps end at %v, shuffle at %v; want m = %v and m + 0.5 + X/C = %v", c, job.MapsEndS, job.ShuffleEndS, c.m, c.m+0.5+c.x/c.mbps)
				}
			case "greedy":
				if !near(done, c.m+compute) && !near(done, c.m+1+compute) {
					t.Errorf("%+v: the local reducer ends at %v, want %v or %v", c, done, c.m+compute, c.m+1+compute)
				}
			}
		}
	}
}

// rateRecorder is an in-process control plane that records the fetch
// rates the simulator reports.
type rateRecorder struct {
	inProcess
	rates map[models.TaskType][]float64
}

func (r *rateRecorder) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	for _, s := range b.Running {
		t := models.ReduceTask
		if s.Phase == models.PhaseMap {
			t = models.MapTask
		}
		r.rates[t] = append(r.rates[t], s.FetchMBps)
	}
	return r.inProcess.Heartbeat(ctx, b)
}

// TestReducersReportFetchRates: over the network a fetching reducer
// reports the sum of its flows' rates, which one node link bounds; maps
// report none; without the network no one reports a rate.
func TestReducersReportFetchRates(t *testing.T) {
	for _, mbps := range []float64{0, 25, 125} {
		sc := TanFig10Scenario()
		if mbps == 0 {
			sc.Network = nil
		} else {
			sc.Network.NodeMBps = mbps
		}
		pipe, err := policy.NewPipeline("fair", policy.HeartbeatConfig{})
		if err != nil {
			t.Fatal(err)
		}
		led, err := ledger.New(sc.LedgerConfig())
		if err != nil {
			t.Fatal(err)
		}
		rec := &rateRecorder{inProcess: inProcess{&ledger.Scheduler{Ledger: led, Pipe: pipe}}, rates: map[models.TaskType][]float64{}}
		if _, err := RunCluster(t.Context(), sc, nil, ClusterOptions{Seed: 1, ControlPlane: rec}); err != nil {
			t.Fatal(err)
		}
		fetching := 0
		for _, r := range rec.rates[models.MapTask] {
			if r != 0 {
				t.Fatalf("%v MB/s: a map reported a fetch rate %v", mbps, r)
			}
		}
		for _, r := range rec.rates[models.ReduceTask] {
			if r < 0 || r > mbps*(1+1e-9) && mbps > 0 || mbps == 0 && r != 0 {
				t.Fatalf("%v MB/s links: a reducer reported %v MB/s", mbps, r)
			}
			if r > 0 {
				fetching++
			}
		}
		if (fetching > 0) != (mbps > 0) {
			t.Fatalf("%v MB/s links: %d reports of a positive fetch rate", mbps, fetching)
		}
	}
}

// TestInputRacks: a job's maps read their blocks from the racks given
// (each map's replicas all in its rack), a rack no node is in is refused
// with the field named, and the JSON field decodes to the same scenario.
func TestInputRacks(t *testing.T) {
	sc := TanFig10Scenario()
	sc.Jobs[0].InputRacks = []string{"rack2", "rack3"}
	s, err := newClusterSim(sc.withDefaults(), nil, ClusterOptions{Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, reps := range s.replicas[0][0] {
		want := sc.Jobs[0].InputRacks[i%2]
		if len(reps) != 3 {
			t.Fatalf("map %d: %d replicas, want 3", i, len(reps))
		}
		for _, r := range reps {
			if s.nodes[r].rack != want {
				t.Fatalf("map %d: a replica on %s of %s, want rack %s", i, s.nodes[r].id, s.nodes[r].rack, want)
			}
		}
	}
	sc.Jobs[1].InputRacks = []string{"rack9"}
	if err := sc.Validate(); err == nil || !strings.Contains(err.Error(), "jobs[1].input_racks[0]") {
		t.Fatalf("an unknown rack: %v", err)
	}
	doc := `{"name":"x","cluster":{"nodes":[{"id":"a","rack":"r1","map_slots":1,"reduce_slots":1},{"id":"b","rack":"r2","map_slots":1,"reduce_slots":1}]},
		"jobs":[{"id":"j","maps":2,"reduces":1,"map_works":[1,1],"reduce_works":[1],"input_racks":["r2"]}]}`
	got, err := DecodeClusterScenario(strings.NewReader(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Jobs[0].InputRacks) != "[r2]" {
		t.Fatalf("decoded input racks %v", got.Jobs[0].InputRacks)
	}
}

// TestCoflowScenario: the Coflow scenario has the trace's 150 racks at
// 10:1, one reducer per reducer rack and one map per mapper rack with its
// input there, map outputs that add up to the trace's shuffle, and runs.
func TestCoflowScenario(t *testing.T) {
	path := testenv.TraceFile(t, "coflow/FB2010-1Hr-150-0.txt")
	jobs, err := trace.ReadFile(path, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := CoflowScenario(path, 8)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Cluster.Racks()) != CoflowRacks || len(sc.Cluster.Nodes) != CoflowRacks*CoflowRackNodes || sc.Network.Oversubscription != CoflowOversubscription {
		t.Fatalf("%d racks, %d nodes, %v:1", len(sc.Cluster.Racks()), len(sc.Cluster.Nodes), sc.Network.Oversubscription)
	}
	for i, j := range sc.Jobs {
		tj := jobs[i]
		if j.ID != tj.ID || j.Maps != len(tj.MapperRacks) || j.Reduces != len(tj.ReducerRacks) || len(j.InputRacks) != j.Maps ||
			!near(j.MapOutputMB*float64(j.Maps), tj.ShuffleBytes/(1<<20)) || j.InputRacks[0] != fmt.Sprint("rack", tj.MapperRacks[0]+1) {
			t.Fatalf("job %d: %+v from %+v", i, j, tj)
		}
	}
	sc.Jobs = sc.Jobs[:3] // the fourth shuffles 82 GB from 27 racks to 116: a run of seconds under -race
	r := runCluster(t, sc, "fair", 1)
	if len(r.Jobs) != len(sc.Jobs) || r.Shuffle == nil || !(r.Shuffle.CrossRackMB > 0) {
		t.Fatalf("run: %d jobs, shuffle %+v", len(r.Jobs), r.Shuffle)
	}
}

// TestGrownScenarios: the grown clusters have their newest tenth of racks
// at 1:1 and the rest at the trace's 10:1, validate, and the SWIM one
// scales the trace's bytes and task counts as SWIM scales a workload to a
// smaller cluster (a tenth of the bytes: a tenth of the blocks, rounded
// up).
func TestGrownScenarios(t *testing.T) {
	coflow, err := CoflowGrownScenario(testenv.TraceFile(t, "coflow/FB2010-1Hr-150-0.txt"), 5)
	if err != nil {
		t.Fatal(err)
	}
	swimPath := testenv.TraceFile(t, "swim/FB-2010_samples_24_times_1hr_0.tsv")
	swim, err := SWIMGrownScenario(swimPath, 50, SWIMFB2010Cluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		sc         *ClusterScenario
		racks, new int
	}{{coflow, CoflowRacks, CoflowNewRacks}, {swim, SWIMFB2010Cluster.Racks, SWIMFB2010Cluster.NewRacks()}} {
		if err := c.sc.withDefaults().Validate(); err != nil {
			t.Fatalf("%s: %v", c.sc.Name, err)
		}
		racks := c.sc.Cluster.Racks()
		if len(racks) != c.racks || len(c.sc.Network.RackOversubscription) != c.new || c.new != (c.racks+9)/10 {
			t.Fatalf("%s: %d racks, overrides %v", c.sc.Name, len(racks), c.sc.Network.RackOversubscription)
		}
		for k := c.racks - c.new + 1; k <= c.racks; k++ {
			if c.sc.Network.RackOversubscription[fmt.Sprint("rack", k)] != 1 {
				t.Fatalf("%s: rack%d not new: %v", c.sc.Name, k, c.sc.Network.RackOversubscription)
			}
		}
	}
	jobs, err := trace.ReadFile(swimPath, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range swim.Jobs {
		tj := jobs[i]
		wantMaps := max(1, int(math.Ceil(tj.InputBytes/10/trace.DefaultBlockBytes)))
		if j.Maps != wantMaps || j.ID != tj.ID || j.SubmitS != tj.SubmitS {
			t.Fatalf("job %d: %d maps, want %d (input %.4g B scaled by 1/10)", i, j.Maps, wantMaps, tj.InputBytes)
		}
		if j.Reduces > 0 && !near(j.MapOutputMB*float64(j.Maps), tj.ShuffleBytes/10/(1<<20)) {
			t.Fatalf("job %d: map output %v MB × %d maps, want %v MB", i, j.MapOutputMB, j.Maps, tj.ShuffleBytes/10/(1<<20))
		}
	}
	for _, bad := range []SWIMCluster{{Racks: 0, Scale: 1}, {Racks: 3, Scale: 0}, {Racks: 3, Scale: 2}} {
		if _, err := SWIMGrownScenario(swimPath, 5, bad); err == nil {
			t.Errorf("cluster %+v accepted", bad)
		}
	}
}

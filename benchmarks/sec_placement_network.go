package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
)

// networkPlacements are the reduce placements the section compares: none
// (the heartbeat order of the assignment policy, Hadoop's Fair Scheduler),
// Hadoop-like random placement, greedy, the threshold policies of Tan et
// al. (receding-horizon, Theorem 4; state-threshold) and the costliest
// slots (Fig. 3's bad placement).
var networkPlacements = []string{"", placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon,
	placement.NameStateThreshold, placement.NameCostliest}

func placementLabel(p string) string {
	if p == "" {
		return "heartbeat order"
	}
	if name, ok := strings.CutSuffix(p, fixedKappa); ok {
		return name + ", fixed κ = 1"
	}
	return p
}

// fixedKappa after a placement's name runs it with fixed fetch costs
// (policy.HeartbeatConfig.FixedFetchCosts: every rack's κ = 1) instead of
// the ones learned from reported fetch rates.
const fixedKappa = "/fixed-kappa"

// placedRuns are one placement's results per seed: makespan, mean job
// time, MB crossing racks, and the mean over jobs of each phase of a job's
// time (sim.JobOutcome): its maps (submission to the last map's end), its
// shuffle's tail (to the last reducer's shuffle end) and its reducers' sort
// and reduce (to the job's end).
type placedRuns struct {
	makespan, response, crossRack []float64
	maps, shuffleTail, reduce     []float64
	// reduceSlots is the time-average share of reduce slots occupied.
	reduceSlots []float64
}

// runPlacements runs the scenario (built fresh per run by build) under
// spec with every placement over seeds env.Seed, env.Seed+1, …, and
// returns one more fresh build for the caller to describe. The runs are
// independent (each builds its scenario and pipeline, seeded by its own
// seed), so they run on GOMAXPROCS goroutines; each result keeps its
// place, so the output does not depend on the order they finish in.
func runPlacements(ctx context.Context, env *Env, build func() (*sim.ClusterScenario, error), spec string, placements []string, seeds int) (map[string]*placedRuns, *sim.ClusterScenario, error) {
	type run struct {
		res *sim.ClusterResult
		err error
	}
	results := make([]run, len(placements)*seeds)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(results)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				pl, k := placements[i/seeds], i%seeds
				sc, err := build()
				if err == nil {
					name, fixed := strings.CutSuffix(pl, fixedKappa)
					results[i].res, err = hbRunConfig(ctx, sc, spec, name, policy.HeartbeatConfig{Seed: env.Seed + uint64(k), FixedFetchCosts: fixed})
				}
				if results[i].err = err; err != nil {
					cancel()
				}
			}
		}()
	}
	for i := range results {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	// The first failure, not the runs it cancelled.
	for _, r := range results {
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			return nil, nil, r.err
		}
	}
	out := map[string]*placedRuns{}
	for p, pl := range placements {
		r := &placedRuns{}
		for k := range seeds {
			res, err := results[p*seeds+k].res, results[p*seeds+k].err
			if err != nil {
				return nil, nil, err
			}
			if res == nil {
				return nil, nil, ctx.Err()
			}
			cross := 0.0
			if res.Shuffle != nil {
				cross = res.Shuffle.CrossRackMB
			}
			r.makespan, r.response, r.crossRack = append(r.makespan, res.MakespanS), append(r.response, res.MeanResponseS), append(r.crossRack, cross)
			var ph [3]float64
			for _, j := range res.Jobs {
				end := max(j.ShuffleEndS, j.MapsEndS)
				ph[0] += (j.MapsEndS - j.SubmitS) / float64(len(res.Jobs))
				ph[1] += (end - j.MapsEndS) / float64(len(res.Jobs))
				ph[2] += (j.FinishS - end) / float64(len(res.Jobs))
			}
			r.maps, r.shuffleTail, r.reduce = append(r.maps, ph[0]), append(r.shuffleTail, ph[1]), append(r.reduce, ph[2])
			r.reduceSlots = append(r.reduceSlots, res.Utilization["reduce_slots"])
		}
		out[pl] = r
	}
	sc, err := build()
	return out, sc, err
}

// paired is the mean and 95% half-width of a − b over the same seeds. A
// difference within 1e-9 of the values is the rounding of the same sum
// taken in another order (two placements that made identical runs) and
// counts as 0, so that the tables do not print it as -5.7e-14 ± 3.5e-13.
func paired(a, b []float64) (float64, float64) {
	d := make([]float64, len(a))
	for i := range a {
		if d[i] = a[i] - b[i]; math.Abs(d[i]) <= 1e-9*max(math.Abs(a[i]), math.Abs(b[i])) {
			d[i] = 0
		}
	}
	return sim.MeanCI95(d)
}

// placementTable lays out the runs: per placement the makespan, mean job
// time, bytes crossing racks, and the paired differences of the mean job
// time against the heartbeat order, random placement and greedy.
func placementTable(runs map[string]*placedRuns, placements []string) string {
	t := newTable("placement", "makespan (s)", "mean job time (s)", "cross-rack (GB)", "Δ job time vs heartbeat order (s)", "Δ job time vs random (s)",
		"Δ job time vs greedy (s)")
	for _, pl := range placements {
		r := runs[pl]
		gb := make([]float64, len(r.crossRack))
		for i, x := range r.crossRack {
			gb[i] = x / 1024
		}
		t.add(placementLabel(pl), ci(sim.MeanCI95(r.makespan)), ci(sim.MeanCI95(r.response)), ci(sim.MeanCI95(gb)),
			ci(paired(r.response, runs[""].response)), ci(paired(r.response, runs[placement.NameRandom].response)),
			ci(paired(r.response, runs[placement.NameGreedy].response)))
	}
	return t.String()
}

// placementNetwork compares the reduce placements inside the heartbeat
// pipeline on the shuffle network: Tan et al.'s Fig. 3 and Fig. 10 setups
// at two link speeds, the Mumak trace in racks, and HaSTE's Tables 2-5
// with the network against without it.
func placementNetwork(ctx context.Context, env *Env) (*Output, error) {
	seeds := Pick(env, 3, 10)
	var b strings.Builder
	fmt.Fprintf(&b, "Reducers placed inside the heartbeat pipeline (`optd simulate --placement`): when a job reaches slow-start its X is "+
		"estimated from its finished maps' output (X = m/m_done·X_done, Tan et al. §I-C), every node costed by H(v), the hop distance "+
		"(0 on the node, 2 in the rack, 4 across racks) from the job's expected map outputs, the slot that is the q-th reducer on its node "+
		"and the Q-th in its rack by H_in(v)·(1+q) + H_x(v)·max(1+q, (1+Q)/κ) (H_in, H_x: the hops from the job's outputs in the node's rack "+
		"and in the others; q + 1 fetchers share the node's link, Q + 1 the rack's downlink, which carries κ node links: learned from the "+
		"fetch rates running reducers report, smoothed at each placement, Tan et al. §V-C; 1 until the rack was seen), and each reducer "+
		"starts only on a node the policy chose. Shuffle over the simulator's network: node links and oversubscribed rack "+
		"uplinks shared max-min fairly (sim.Network). Δ columns are paired over the same %d seeds (mean ± 95%% half-width): negative is "+
		"faster. Pipeline: fair.\n\n", seeds)
	all := map[string]map[string]*placedRuns{}
	for _, c := range []struct {
		name string
		mbps float64
	}{{"tan-fig3-sort", 125}, {"tan-fig3-sort", 25}, {"tan-fig10-sort", 125}, {"tan-fig10-sort", 25}} {
		build := func() (*sim.ClusterScenario, error) {
			sc, err := sim.BuiltinCluster(c.name)
			if err == nil {
				sc.Network.NodeMBps = c.mbps
			}
			return sc, err
		}
		runs, _, err := runPlacements(ctx, env, build, "fair", networkPlacements, seeds)
		if err != nil {
			return nil, err
		}
		all[fmt.Sprint(c.name, "@", c.mbps)] = runs
		env.Logf("%s at %v MB/s done", c.name, c.mbps)
		fmt.Fprintf(&b, "**%s, node links %v MB/s**\n\n%s\n", c.name, c.mbps, placementTable(runs, networkPlacements))
	}
	b.WriteString(networkExplanation(all))
	if err := mumakPlacement(ctx, env, &b); err != nil {
		return nil, err
	}
	if err := coflowPlacement(ctx, env, &b); err != nil {
		return nil, err
	}
	if err := grownPlacement(ctx, env, &b); err != nil {
		return nil, err
	}
	if err := hasteWithNetwork(ctx, env, &b); err != nil {
		return nil, err
	}
	return &Output{Markdown: b.String()}, nil
}

// networkExplanation reads the Fig. 3 and Fig. 10 runs (by "name@mbps").
func networkExplanation(all map[string]map[string]*placedRuns) string {
	maxDelta := func(key string) float64 {
		m := 0.0
		for pl, r := range all[key] {
			if pl != "" {
				d, _ := paired(r.response, all[key][""].response)
				m = max(m, math.Abs(d))
			}
		}
		return m
	}
	job := func(key, pl string) string { return num(mean(all[key][pl].response)) }
	slow := "tan-fig10-sort@25"
	return fmt.Sprintf("What the figures show. At 125 MB/s no placement moves the mean job time by more than %s s on Fig. 3 and %s s on Fig. 10 "+
		"against the heartbeat order (paired means): the reducers fetch while the maps run and the jobs are map-bound, so Fig. 3's "+
		"direction (a bad placement 1.75 times slower) is not reproduced at this speed. %s At 25 MB/s the shuffle is the bottleneck of Fig. 10's larger job. On Fig. 10 "+
		"the mean job time is then %s s under the heartbeat order, %s s under random placement, %s s under greedy and %s s under "+
		"receding-horizon: %s. The Fair Scheduler starts as many of a job's reducers as the heartbeating node has free reduce slots, so "+
		"two reducers share one node link; the cost policies spread them over nodes (the q term) and over racks (the Q term: with the three "+
		"racks alike, the finished maps' outputs make one rack a little cheaper, and without the Q term every cheapest-first policy put a "+
		"job's reducers in that rack, behind its oversubscribed downlink). %sThe model was not tuned to the paper.\n\n",
		num(maxDelta("tan-fig3-sort@125")), num(maxDelta("tan-fig10-sort@125")), fig3Phases(all),
		job(slow, ""), job(slow, placement.NameRandom), job(slow, placement.NameGreedy), job(slow, placement.NameRecedingHorizon),
		versus(all[slow], placement.NameRecedingHorizon), asGreedy(all[slow]))
}

// fig3Phases measures why Fig. 3 is not reproduced: the phases of the
// Sort's time under greedy at both link speeds, and what the bad placement
// (costliest) changes.
func fig3Phases(all map[string]map[string]*placedRuns) string {
	const fastMBps, slowMBps = 125, 25
	fast, slow := fmt.Sprint("tan-fig3-sort@", fastMBps), fmt.Sprint("tan-fig3-sort@", slowMBps)
	if all[fast] == nil || all[slow] == nil {
		return ""
	}
	phases := func(key string) string {
		r := all[key][placement.NameGreedy]
		return fmt.Sprintf("its maps take %s s, the shuffle's tail after the last map %s s, its sort and reduce %s s (job %s s)",
			num(mean(r.maps)), num(mean(r.shuffleTail)), num(mean(r.reduce)), num(mean(r.response)))
	}
	share := func(key string) string {
		r := all[key][placement.NameGreedy]
		return pct(mean(r.shuffleTail) / mean(r.response))
	}
	sc := sim.TanFig3Scenario()
	slots := 0
	for _, n := range sc.Cluster.Nodes {
		slots += n.MapSlots
	}
	j := sc.Jobs[0]
	blockS := j.MapWork.Mean()
	perNode := sc.Cluster.Nodes[0].MapSlots
	costliest := ""
	if slices.Equal(all[fast][placement.NameCostliest].response, all[fast][placement.NameGreedy].response) &&
		slices.Equal(all[slow][placement.NameCostliest].response, all[slow][placement.NameGreedy].response) {
		costliest = " The costliest placement gave the Sort the same job times as greedy on every seed at both speeds: with the slot costs' " +
			"q term a node's second slot costs twice its first, so the costliest half of the slots is one per node, as greedy's cheapest half is; " +
			"the slot costs have no placement of Fig. 3 that is worse by much."
	}
	return fmt.Sprintf("Why, measured on Fig. 3's Sort under greedy (means over the seeds): at %v MB/s %s; at %v MB/s %s. Its %d maps run "+
		"in %d waves on the %d map slots, and the reducers fetch each map's output as it ends: a node's %d map slots write %s MB/s "+
		"(%v MB per %s s each), less than its link carries at either speed, so the fetches keep up with the maps and a placement can only "+
		"change the shuffle's tail after the last map: %s of the job at %v MB/s, %s at %v MB/s. A bad placement 1.75 times slower needs a "+
		"shuffle that is most of the job's time, which this model's map speed does not give; the model was not changed to match it.%s",
		fastMBps, phases(fast), slowMBps, phases(slow), j.Maps, (j.Maps+slots-1)/slots, slots, perNode,
		num(float64(perNode)*j.MapOutputMB/blockS), j.MapOutputMB, num(blockS), share(fast), fastMBps, share(slow), slowMBps, costliest)
}

// asGreedy notes when the threshold policies placed every job as greedy
// did (the same job times on every seed).
func asGreedy(runs map[string]*placedRuns) string {
	for _, pl := range []string{placement.NameRecedingHorizon, placement.NameStateThreshold} {
		if !slices.Equal(runs[pl].response, runs[placement.NameGreedy].response) {
			return ""
		}
	}
	return "The threshold policies placed every job as greedy did, on every seed: with two jobs of 2 and 4 reducers and slots enough " +
		"for both, they take the cheapest slots, nothing being worth saving for a later job. "
}

// versus says how placement pl's mean job time compares with random's and
// greedy's, paired over the same seeds: faster or slower where the 95%
// interval excludes 0, "no different" otherwise.
func versus(runs map[string]*placedRuns, pl string) string {
	var parts []string
	for _, other := range []string{placement.NameRandom, placement.NameGreedy} {
		d, h := paired(runs[pl].response, runs[other].response)
		verdict := "no different from"
		switch {
		case d+h < 0:
			verdict = "faster than"
		case d-h > 0:
			verdict = "slower than"
		}
		parts = append(parts, fmt.Sprintf("%s is %s %s (%s s)", pl, verdict, other, ci(d, h)))
	}
	return strings.Join(parts, ", ")
}

// mumakPlacement compares the placements on the Mumak trace with the
// network on (racks of 20 nodes, uplinks 5:1).
func mumakPlacement(ctx context.Context, env *Env, b *strings.Builder) error {
	path, ok, err := traceOrSkip(env, b, "Mumak trace", mumakTrace)
	if !ok || err != nil {
		return err
	}
	// The first 10 jobs in full: a run of them takes about 20 s (the whole
	// trace several times that), and the section runs 10.
	jobs, seeds := Pick(env, 3, 10), Pick(env, 1, 2)
	placements := []string{"", placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon}
	build := func() (*sim.ClusterScenario, error) {
		sc, err := mumakScenario(path, jobs)
		if err == nil {
			sc.Network = &sim.Network{Oversubscription: 5}
		}
		return sc, err
	}
	runs, sc, err := runPlacements(ctx, env, build, "fair", placements, seeds)
	if err != nil {
		return err
	}
	// Wall time with and without the network, peers in the same run.
	var with, without time.Duration
	for _, nw := range []*sim.Network{nil, sc.Network} {
		sc.Network = nw
		start := time.Now()
		if _, err := hbRun(ctx, sc, "fair", env.Seed); err != nil {
			return err
		}
		if nw == nil {
			without = time.Since(start)
		} else {
			with = time.Since(start)
		}
	}
	fmt.Fprintf(b, "**Mumak trace** (%d jobs, %d nodes in racks of %d, 1 GbE, uplinks 5:1; map output from the trace's shuffle bytes; %d seeds; "+
		"one run takes %.2f s with the network, %.2f s without: ×%.2f)\n\n%s\n",
		len(sc.Jobs), len(sc.Cluster.Nodes), mumakRackNodes, seeds, with.Seconds(), without.Seconds(), with.Seconds()/without.Seconds(),
		placementTable(runs, placements))
	shuffleMB, largest := 0.0, 0.0
	for _, j := range sc.Jobs {
		if j.Reduces > 0 {
			out := j.MapOutputMB
			if out == 0 {
				out = sim.DefaultMapOutputMB
			}
			shuffleMB += out * float64(j.Maps*max(j.Stages, 1))
		}
	}
	for _, pl := range placements[1:] {
		d, _ := paired(runs[pl].response, runs[placement.NameRandom].response)
		largest = max(largest, math.Abs(d))
	}
	fmt.Fprintf(b, "The jobs shuffle %s GB in all (their recorded shuffle bytes), against mean job times of %s s: the shuffle is a small "+
		"part of these jobs at 1 GbE, and no placement's mean job time differs from random placement's by more than %s s (paired mean; the table gives the "+
		"intervals). The threshold policies do not beat random and greedy on this trace for that reason.\n\n",
		num(shuffleMB/1024), num(mean(runs[""].response)), num(largest))
	return nil
}

// hasteWithNetwork reruns HaSTE's Tables 2-5 with the network (one rack,
// 1 GbE, map outputs of 128 MB) and compares each scheduler's makespan
// with its makespan without the network.
func hasteWithNetwork(ctx context.Context, env *Env, b *strings.Builder) error {
	seeds := Pick(env, 1, 3)
	fmt.Fprintf(b, "**HaSTE Tables 2-5 with the network** (one rack of 1 GbE, each map writing 128 MB; mean makespan over %d seeds; "+
		"the tables are otherwise the haste-tables section's). Without the network a reduce's shuffle is a third of its work; with it, "+
		"the fetches of its share of the map outputs.\n\n", seeds)
	for _, table := range Pick(env, []string{"haste-table3"}, []string{"haste-table2", "haste-table3", "haste-table4", "haste-table5"}) {
		t := newTable("scheduler", "makespan without (s)", "makespan with network (s)", "change")
		mk := map[bool]map[string]float64{false: {}, true: {}}
		for _, spec := range hasteTablePolicies {
			for _, net := range []bool{false, true} {
				for k := range seeds {
					sc, err := sim.BuiltinCluster(table)
					if err != nil {
						return err
					}
					if net {
						sc.Network = &sim.Network{}
					}
					r, err := hbRun(ctx, sc, spec, env.Seed+uint64(k))
					if err != nil {
						return err
					}
					mk[net][spec] += r.MakespanS / float64(seeds)
				}
			}
			t.add(spec, num(mk[false][spec]), num(mk[true][spec]), pct(mk[true][spec]/mk[false][spec]-1))
		}
		env.Logf("%s with the network done", table)
		fmt.Fprintf(b, "*%s*: HaSTE vs FFD-DP makespan %s s vs %s s without the network, %s s vs %s s with it.\n\n%s\n",
			strings.TrimPrefix(table, "haste-"), num(mk[false]["haste"]), num(mk[false]["ffd-dp"]), num(mk[true]["haste"]), num(mk[true]["ffd-dp"]), t.String())
	}
	return nil
}

// coflowTrace is the Coflow-Benchmark's Facebook trace (data/coflow).
const coflowTrace = "coflow/FB2010-1Hr-150-0.txt"

// coflowPlacement compares the placements on the Coflow trace with its
// racks (sim.CoflowScenario: 150 racks, uplinks at 10:1).
func coflowPlacement(ctx context.Context, env *Env, b *strings.Builder) error {
	path, ok, err := traceOrSkip(env, b, "Coflow trace", coflowTrace)
	if !ok || err != nil {
		return err
	}
	// The first 11 jobs end before the trace's largest (1 TB, 147 maps and
	// 138 reducers: a run with it takes seconds, not a second).
	jobs, seeds := Pick(env, 11, 25), Pick(env, 3, 10)
	placements := []string{"", placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon, placement.NameStateThreshold}
	build := func() (*sim.ClusterScenario, error) { return sim.CoflowScenario(path, jobs) }
	runs, sc, err := runPlacements(ctx, env, build, "fair", placements, seeds)
	if err != nil {
		return err
	}
	shuffleMB, small := 0.0, 0
	for _, j := range sc.Jobs {
		mb := j.MapOutputMB * float64(j.Maps)
		shuffleMB += mb
		if mb < sim.DefaultMapOutputMB {
			small++
		}
	}
	env.Logf("coflow trace done")
	fmt.Fprintf(b, "**Coflow trace** (FB2010, the first %d jobs with a shuffle: %d nodes in %d racks of %d, 1 GbE, uplinks %d:1; one map "+
		"per mapper rack with its input in that rack, one reducer per reducer rack; %d seeds)\n\n%s\n",
		len(sc.Jobs), len(sc.Cluster.Nodes), sim.CoflowRacks, sim.CoflowRackNodes, sim.CoflowOversubscription, seeds, placementTable(runs, placements))
	least := math.Inf(1)
	for _, pl := range placements {
		least = min(least, mean(runs[pl].crossRack))
	}
	fmt.Fprintf(b, "The jobs shuffle %s GB in all, %d of the %d less than one block (%d MB): %s; %s. A job's reducers are one per reducer rack "+
		"and its maps one per mapper rack, so a large job's outputs are in many racks, and under every placement at least %s of the "+
		"shuffle crosses racks; the small jobs, most of the mean, hardly shuffle. The differences are within %s of the mean job time.\n\n",
		num(shuffleMB/1024), small, len(sc.Jobs), sim.DefaultMapOutputMB,
		versus(runs, placement.NameRecedingHorizon), versus(runs, placement.NameStateThreshold), pct(least/shuffleMB), pct(spread(runs, placements)))
	return nil
}

// traceOrSkip returns the absolute path of trace file rel under the data
// directory, or writes that the part named label is skipped (no data
// directory, or the file is absent) and returns ok = false.
func traceOrSkip(env *Env, b *strings.Builder, label, rel string) (path string, ok bool, err error) {
	if env.DataDir == "" {
		fmt.Fprintf(b, "**%s**: skipped, no trace data directory (--data).\n\n", label)
		return "", false, nil
	}
	if path, err = filepath.Abs(filepath.Join(env.DataDir, rel)); err != nil {
		return "", false, err
	}
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(b, "**%s**: skipped, %s is absent (see data/README.md).\n\n", label, path)
		return "", false, nil
	}
	return path, true, nil
}

// spread is the largest difference between two placements' mean job
// times relative to the smallest of them.
func spread(runs map[string]*placedRuns, placements []string) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, pl := range placements {
		m := mean(runs[pl].response)
		lo, hi = min(lo, m), max(hi, m)
	}
	return (hi - lo) / lo
}

// grownPlacements are the placements compared on the grown clusters: the
// heartbeat order, random, greedy, the threshold policies (state-threshold,
// receding-horizon's Theorem 4 thresholds, rolling-horizon's threshold
// tables) with learned fetch costs, and greedy and state-threshold with
// fixed ones.
var grownPlacements = []string{"", placement.NameRandom, placement.NameGreedy, placement.NameStateThreshold, placement.NameRecedingHorizon,
	placement.NameRollingHorizon, placement.NameGreedy + fixedKappa, placement.NameStateThreshold + fixedKappa}

// grownPlacement compares the placements on the Coflow and SWIM FB-2010
// traces replayed on grown clusters (sim.CoflowGrownScenario,
// sim.SWIMGrownScenario: the newest tenth of the racks at 1:1, the rest at
// 10:1), where the racks are not alike, and measures what limits them:
// the phases of a job's time, the reduce slots' occupancy, and the same
// runs with every rack new.
func grownPlacement(ctx context.Context, env *Env, b *strings.Builder) error {
	seeds := Pick(env, 2, 10)
	b.WriteString("**Grown clusters** (the Coflow and SWIM FB-2010 traces on clusters grown as clusters grow: the racks bought first with the " +
		"trace's 10:1 uplinks, the newest tenth with full-bisection 1:1 ones, so the racks that fetch fast are few; the Coflow scenario as " +
		"above, SWIM's jobs on racks of 20 Hadoop 1 nodes scaled as SWIM's replay scales a workload to a smaller cluster: " +
		"`sim.CoflowGrownScenario`, `sim.SWIMGrownScenario`). Δ columns paired over the same seeds, negative is less; the fixed-κ rows " +
		"keep every rack's κ at 1 (hop distances only) instead of learning it from fetch rates.\n\n")
	// Full sizes: about a minute each for the 9 placements over 10 seeds
	// (the 11 Coflow jobs before the trace's 1 TB one); with 25 Coflow and
	// 200 SWIM jobs the block had not finished after 58 minutes on a
	// loaded machine.
	for _, c := range []struct {
		label, rel string
		jobs       int
		build      func(path string, jobs int) (*sim.ClusterScenario, error)
	}{
		{"Coflow FB2010, grown", coflowTrace, Pick(env, 3, 11), sim.CoflowGrownScenario},
		{"SWIM FB-2010, grown", swimFB2010, Pick(env, 15, 60), func(path string, jobs int) (*sim.ClusterScenario, error) {
			return sim.SWIMGrownScenario(path, jobs, sim.SWIMFB2010Cluster)
		}},
	} {
		path, ok, err := traceOrSkip(env, b, c.label, c.rel)
		if !ok || err != nil {
			return err
		}
		build := func() (*sim.ClusterScenario, error) { return c.build(path, c.jobs) }
		runs, sc, err := runPlacements(ctx, env, build, "fair", grownPlacements, seeds)
		if err != nil {
			return err
		}
		// The same cluster with every rack new: how much of the job time
		// the 10:1 uplinks cost, whatever the placement.
		allNew := func() (*sim.ClusterScenario, error) {
			sc, err := build()
			if err == nil {
				for _, r := range sc.Cluster.Racks() {
					sc.Network.RackOversubscription[r.ID] = 1
				}
			}
			return sc, err
		}
		ref, _, err := runPlacements(ctx, env, allNew, "fair", []string{placement.NameRandom}, seeds)
		if err != nil {
			return err
		}
		env.Logf("%s done", c.label)
		fmt.Fprintf(b, "*%s* (%d jobs, %d nodes in %d racks, %d of them new; %d seeds)\n\n%s\n%s\n", c.label, len(sc.Jobs), len(sc.Cluster.Nodes),
			len(sc.Cluster.Racks()), len(sc.Network.RackOversubscription), seeds, grownTable(runs), grownWhy(runs, ref[placement.NameRandom]))
	}
	return nil
}

// swimFB2010 is SWIM's FB-2010 day (data/swim).
const swimFB2010 = "swim/FB-2010_samples_24_times_1hr_0.tsv"

// grownTable lays out the grown-cluster runs: per placement the mean job
// time, makespan and bytes crossing racks, each with its paired
// difference from random placement and from greedy, and the reduce slots'
// occupancy.
func grownTable(runs map[string]*placedRuns) string {
	t := newTable("placement", "mean job time (s)", "Δ vs random", "Δ vs greedy", "makespan (s)", "Δ vs random", "Δ vs greedy",
		"cross-rack (GB)", "Δ vs random", "Δ vs greedy", "reduce slots busy")
	rnd, gr := runs[placement.NameRandom], runs[placement.NameGreedy]
	gb := func(r *placedRuns) []float64 {
		out := make([]float64, len(r.crossRack))
		for i, x := range r.crossRack {
			out[i] = x / 1024
		}
		return out
	}
	for _, pl := range grownPlacements {
		r := runs[pl]
		t.add(placementLabel(pl), ci(sim.MeanCI95(r.response)), ci(paired(r.response, rnd.response)), ci(paired(r.response, gr.response)),
			ci(sim.MeanCI95(r.makespan)), ci(paired(r.makespan, rnd.makespan)), ci(paired(r.makespan, gr.makespan)),
			ci(sim.MeanCI95(gb(r))), ci(paired(gb(r), gb(rnd))), ci(paired(gb(r), gb(gr))), pct(mean(r.reduceSlots)))
	}
	return t.String()
}

// grownWhy states the verdicts of the threshold policies against random
// and greedy, learned against fixed fetch costs, and what limits the
// placements: the phases of the mean job time and the job time with
// every rack new (allNew: random placement on that cluster).
func grownWhy(runs map[string]*placedRuns, allNew *placedRuns) string {
	var verdicts []string
	for _, pl := range []string{placement.NameStateThreshold, placement.NameRecedingHorizon, placement.NameRollingHorizon} {
		verdicts = append(verdicts, versus(runs, pl))
	}
	learned := func(pl string) string {
		d, h := paired(runs[pl].response, runs[pl+fixedKappa].response)
		return fmt.Sprintf("%s learned − fixed %s s", pl, ci(d, h))
	}
	g := runs[placement.NameGreedy]
	return fmt.Sprintf("Verdicts on mean job time: %s. Learned against fixed fetch costs: %s, %s. What limits the placements: under greedy a "+
		"job's mean time splits into its maps %s s, the shuffle's tail after its last map %s s (what a placement can change) and its sort "+
		"and reduce %s s; the reduce slots are %s busy on average (a threshold policy gains only when the cheap slots it keeps free are "+
		"wanted by a larger job before they would free up). With every rack new (1:1) random placement's mean job time is %s s against "+
		"%s s here: the 10:1 uplinks cost %s s of it, but a reducer's fetch from an old rack crosses that rack's 10:1 uplink wherever "+
		"the reducer runs outside it, so the new racks, a tenth, speed only the part of a shuffle that their own downlinks bound.\n\n",
		strings.Join(verdicts, "; "), learned(placement.NameGreedy), learned(placement.NameStateThreshold),
		num(mean(g.maps)), num(mean(g.shuffleTail)), num(mean(g.reduce)), pct(mean(g.reduceSlots)),
		num(mean(allNew.response)), num(mean(runs[placement.NameRandom].response)), num(mean(runs[placement.NameRandom].response)-mean(allNew.response)))
}

package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/models/trace"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// mumakTrace is the Rumen trace of 19 real jobs of Apache Hadoop's Mumak
// tests, flattened to one row per attempt (under Config.DataDir; see
// data/README.md).
const mumakTrace = "hadoop-mumak/19-jobs.attempts.csv"

// The Mumak cluster: nodes ⟨8 GB, 8 vcores⟩ in racks of 20, map containers
// ⟨1 GB, 1 vcore⟩, reduce containers ⟨2 GB, 1 vcore⟩, heartbeats every 3 s
// (the trace is from Hadoop 0.20, whose TaskTrackers heartbeat every 3 s on
// small clusters). 100 nodes hold 800 maps at once: the trace's 1,545-node
// cluster shrunk so that its jobs contend.
const (
	mumakNodes     = 100
	mumakRackNodes = 20
)

// mumakScenario replays the jobs of the Mumak trace (the first jobs when
// jobs > 0) on the Mumak cluster (sim.DecodeClusterScenario's "trace"):
// submit times and task counts from the trace, task works the durations of
// the successful attempts where every task of a type has one. The other
// tasks (the maps of jobs 0007, 0008 and 0018 and the reduces of 0012 and
// 0020, not all of which succeeded) draw theirs per seed from an
// exponential law whose mean is the median successful attempt of their type
// in their own job (sim.AttemptWorks), or in the whole trace for a job with
// none (0018's maps, 0012's reduces).
func mumakScenario(file string, jobs int) (*sim.ClusterScenario, error) {
	nodes := make([]map[string]any, mumakNodes)
	for i := range nodes {
		nodes[i] = map[string]any{"id": fmt.Sprintf("node%d", i+1), "rack": fmt.Sprintf("rack%d", i/mumakRackNodes+1), "capacity": []int{8192, 8}}
	}
	placeholder := map[string]any{"kind": "exponential", "mean": 1}
	doc, err := json.Marshal(map[string]any{
		"name": "mumak", "seed": 1, "heartbeat_s": 3,
		"cluster": map[string]any{"resources": models.MemoryVCores(), "nodes": nodes},
		"trace": map[string]any{"file": file, "max_jobs": jobs,
			"demand":   map[string]any{"map": []int{1024, 1}, "reduce": []int{2048, 1}},
			"map_work": placeholder, "reduce_work": placeholder},
	})
	if err != nil {
		return nil, err
	}
	sc, err := sim.DecodeClusterScenario(strings.NewReader(string(doc)), filepath.Dir(file))
	if err != nil {
		return nil, err
	}
	recorded, err := trace.ReadFile(file, trace.Options{})
	if err != nil {
		return nil, err
	}
	own := map[string][2][]float64{}
	var all [2][]float64
	for _, j := range recorded {
		m, r := sim.AttemptWorks(j.Attempts)
		own[j.ID] = [2][]float64{m, r}
		all[0], all[1] = append(all[0], m...), append(all[1], r...)
	}
	for i := range sc.Jobs {
		j := &sc.Jobs[i]
		var laws [2]models.Dist
		for k := range laws {
			works := own[j.ID][k]
			if len(works) == 0 {
				works = all[k]
			}
			if laws[k], err = exponentialLaw(median(works)); err != nil {
				return nil, err
			}
		}
		j.MapWork, j.ReduceWork = laws[0], laws[1]
	}
	return sc, nil
}

// exponentialLaw is the exponential law of the given mean (1 when there
// is no recorded work to take it from).
func exponentialLaw(mean float64) (models.Dist, error) {
	if !(mean > 0) {
		mean = 1
	}
	return models.DecodeDist([]byte(fmt.Sprintf(`{"kind":"exponential","mean":%g}`, mean)), "", "work")
}

// median returns the median of xs (0 when empty).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// mumakPolicies are the heartbeat pipelines of the section (quick mode:
// the first three). Not fair+late: LATE's speculation scans every running
// attempt on every heartbeat, and one run of the trace took over 150 s, ten
// times fair's, beyond the report's budget.
var mumakPolicies = []string{"fifo", "fair", "haste", "drf", "capacity", "ffd-dp", "haste-a"}

// mumakRuns are one pipeline's makespans and mean response times per seed,
// with the lower bound of each seed's run (sim.ClusterLowerBound).
type mumakRuns struct {
	makespan, response, boundMakespan, boundResponse []float64
	bound                                            *sim.ClusterBound // of the first seed
}

// tracesHeartbeat simulates the main heartbeat pipelines on the Mumak
// trace and puts beside each the lower bound on the same run.
func tracesHeartbeat(ctx context.Context, env *Env) (*Output, error) {
	if env.DataDir == "" {
		return nil, Skipf("no trace data directory given (--data)")
	}
	path, err := filepath.Abs(filepath.Join(env.DataDir, mumakTrace))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, Skipf("trace %s is absent (see data/README.md)", path)
	}
	jobs, seeds, specs := Pick(env, 5, 0), Pick(env, 1, 3), Pick(env, mumakPolicies[:3], mumakPolicies)
	sc, err := mumakScenario(path, jobs)
	if err != nil {
		return nil, err
	}
	runs := map[string]*mumakRuns{}
	for _, spec := range specs {
		r := &mumakRuns{}
		for k := range seeds {
			seed := env.Seed + uint64(k)
			res, err := hbRun(ctx, sc, spec, seed)
			if err != nil {
				return nil, err
			}
			pipe, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: seed})
			if err != nil {
				return nil, err
			}
			b, err := sim.ClusterLowerBound(sc, sim.BoundOptionsFor(pipe, seed))
			if err != nil {
				return nil, err
			}
			if r.bound == nil {
				r.bound = b
			}
			r.makespan, r.response = append(r.makespan, res.MakespanS), append(r.response, res.MeanResponseS)
			r.boundMakespan, r.boundResponse = append(r.boundMakespan, b.MakespanS), append(r.boundResponse, b.MeanResponseS)
		}
		env.Logf("%s: makespan %.0f s, mean response %.0f s (bounds %.0f s, %.0f s)", spec,
			mean(r.makespan), mean(r.response), mean(r.boundMakespan), mean(r.boundResponse))
		runs[spec] = r
	}
	return mumakReport(env, sc, specs, runs, jobs, seeds)
}

// mumakReport lays out the section: the table, the best policy's gaps, the
// bound's terms and the figure.
func mumakReport(env *Env, sc *sim.ClusterScenario, specs []string, runs map[string]*mumakRuns, jobs, seeds int) (*Output, error) {
	t := newTable("policy", "makespan (s)", "makespan bound (s)", "gap", "mean response (s)", "response bound (s)", "gap")
	values := [][]float64{make([]float64, len(specs)), make([]float64, len(specs))}
	bestMk, bestResp := specs[0], specs[0]
	for k, spec := range specs {
		r := runs[spec]
		gm, gr := gaps(r.makespan, r.boundMakespan), gaps(r.response, r.boundResponse)
		t.add(spec, ci(sim.MeanCI95(r.makespan)), ci(sim.MeanCI95(r.boundMakespan)), ci(sim.MeanCI95(gm))+"%",
			ci(sim.MeanCI95(r.response)), ci(sim.MeanCI95(r.boundResponse)), ci(sim.MeanCI95(gr))+"%")
		values[0][k], values[1][k] = mean(r.makespan)/mean(r.boundMakespan), mean(r.response)/mean(r.boundResponse)
		if mean(r.makespan) < mean(runs[bestMk].makespan) {
			bestMk = spec
		}
		if mean(r.response) < mean(runs[bestResp].response) {
			bestResp = spec
		}
	}
	tasks := 0
	for _, j := range sc.Jobs {
		tasks += j.Maps + j.Reduces
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The Mumak/Rumen trace of Apache Hadoop's tests (%s: %s, %d tasks) replayed by the cluster simulator on %d nodes ⟨8 GB, 8 vcores⟩ "+
		"in racks of %d (map containers ⟨1 GB, 1 vcore⟩, reduces ⟨2 GB, 1 vcore⟩, heartbeats every 3 s, HDFS 3 replicas): submit times, "+
		"task counts and, where every task of a type succeeded, task works from the trace's successful attempts; the other tasks draw "+
		"theirs per seed from an exponential law with the median successful attempt of their type in their job (in the whole trace "+
		"for a job with none; mumakScenario). Mean over %d seed(s) "+
		"(%d..%d: block replicas and the drawn works) ± the half-width of a 95%% Student-t interval.\n\n",
		mumakTrace, map[bool]string{true: fmt.Sprintf("its first %d jobs", jobs), false: fmt.Sprintf("all %d jobs with tasks", len(sc.Jobs))}[jobs > 0],
		tasks, mumakNodes, mumakRackNodes, seeds, env.Seed, env.Seed+uint64(seeds)-1)
	fmt.Fprintf(&b, "Beside each policy, the lower bound of sim.ClusterLowerBound on the very same run (same works, same seed; sim.BoundOptionsFor "+
		"the pipeline: a policy that may grant more than requested or change slots gets the weaker bound valid for it): no policy, "+
		"online or offline, can do better. The gap is "+
		"(policy − bound)/bound per seed.\n\n")
	b.WriteString(t.String())
	lb := runs[specs[0]].bound
	fmt.Fprintf(&b, "\n**Best policy vs the bound.** The best makespan is %s's, %s above the bound; the best mean response time is %s's, %s above the bound. ",
		bestMk, pct(mean(runs[bestMk].makespan)/mean(runs[bestMk].boundMakespan)-1),
		bestResp, pct(mean(runs[bestResp].response)/mean(runs[bestResp].boundResponse)-1))
	if same := identicalRuns(specs, runs); len(same) > 0 {
		fmt.Fprintf(&b, "Identical on every seed (every job asks for the same map and reduce containers): %s. ", strings.Join(same, "; "))
	}
	fmt.Fprintf(&b, "The bound's terms on seed %d: makespan ≥ max(critical path %s s, %s area with release times %s s); "+
		"mean response ≥ max(each job alone %s s, SRPT on one machine of the cluster's capacity %s s). "+
		"The bound ignores the wait for heartbeats, slow-start and per-node packing, so part of every gap is out of any policy's reach.\n",
		env.Seed, num(lb.CriticalPathMakespanS), lb.Binding, num(lb.AreaMakespanS), num(lb.JobResponseS), num(lb.SRPTResponseS))
	p, err := barPlot("Heartbeat policies on the Mumak trace (policy / lower bound)", "policy / lower bound", []string{"makespan", "mean response"}, specs, values)
	if err != nil {
		return nil, err
	}
	return &Output{Markdown: b.String(), Figures: []Figure{
		{Name: "traces-heartbeat-mumak", Caption: "Makespan and mean response time of each heartbeat policy on the Mumak trace over the lower bound on the same run (1 = optimal)", Plot: p},
	}}, nil
}

// identicalRuns lists the groups of pipelines whose makespans and mean
// response times are equal on every seed, as "a = b = c".
func identicalRuns(specs []string, runs map[string]*mumakRuns) []string {
	var groups []string
	seen := map[string]bool{}
	for i, a := range specs {
		if seen[a] {
			continue
		}
		group := []string{a}
		for _, c := range specs[i+1:] {
			if slices.Equal(runs[a].makespan, runs[c].makespan) && slices.Equal(runs[a].response, runs[c].response) {
				group, seen[c] = append(group, c), true
			}
		}
		if len(group) > 1 {
			groups = append(groups, strings.Join(group, " = "))
		}
	}
	return groups
}

// mean is the arithmetic mean of xs.
func mean(xs []float64) float64 {
	m, _ := sim.MeanCI95(xs)
	return m
}

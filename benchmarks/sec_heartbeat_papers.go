package benchmarks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/filter"
	"github.com/optd/optd/policy/sharing"
	"github.com/optd/optd/policy/slots"
	"github.com/optd/optd/policy/speculation"
	"github.com/optd/optd/sim"
)

// This file reproduces the slot, speculation and sharing results of
// DynamicMR (paper 000, Fig. 8), resource stealing and BASE (paper 003,
// Figs. 2-3) and DynamicAdjust (paper 004, Fig. 5) on the cluster
// simulator's built-in scenarios. Nothing here is fitted to a published
// figure: every number is the mean over the seeds of the run.

// hbRun simulates one scenario under one policy spec and seed.
func hbRun(ctx context.Context, sc *sim.ClusterScenario, spec string, seed uint64) (*sim.ClusterResult, error) {
	return hbRunPlaced(ctx, sc, spec, "", seed)
}

// hbRunPlaced is hbRun with reducers placed by a placement policy (empty:
// none).
func hbRunPlaced(ctx context.Context, sc *sim.ClusterScenario, spec, placement string, seed uint64) (*sim.ClusterResult, error) {
	return hbRunConfig(ctx, sc, spec, placement, policy.HeartbeatConfig{Seed: seed})
}

// hbRunConfig is hbRunPlaced with the pipeline's configuration (its Seed
// seeds the run too).
func hbRunConfig(ctx context.Context, sc *sim.ClusterScenario, spec, placement string, cfg policy.HeartbeatConfig) (*sim.ClusterResult, error) {
	seed := cfg.Seed
	p, err := policy.NewPlacedPipeline(spec, placement, cfg)
	if err != nil {
		return nil, err
	}
	r, err := sim.RunCluster(ctx, sc, p, sim.ClusterOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("%s under %s (placement %q): %w", sc.Name, spec, placement, err)
	}
	return r, nil
}

// hbMean runs seeds env.Seed .. env.Seed+n−1 of a scenario (built fresh
// for each run) and returns the mean makespan and the summed speculative
// counts.
func hbMean(ctx context.Context, env *Env, build func() (*sim.ClusterScenario, error), spec string, n int) (float64, sim.Speculative, error) {
	var sum float64
	var spec0 sim.Speculative
	for k := range n {
		sc, err := build()
		if err != nil {
			return 0, spec0, err
		}
		r, err := hbRun(ctx, sc, spec, env.Seed+uint64(k))
		if err != nil {
			return 0, spec0, err
		}
		sum += r.MakespanS
		spec0.Launched += r.Speculative.Launched
		spec0.Useful += r.Speculative.Useful
		spec0.Wasted += r.Speculative.Wasted
	}
	return sum / float64(n), spec0, nil
}

func builtin(name string) func() (*sim.ClusterScenario, error) {
	return func() (*sim.ClusterScenario, error) { return sim.BuiltinCluster(name) }
}

// reduction is 1 − after/before.
func reduction(before, after float64) float64 { return 1 - after/before }

// dynamicMRFig8 sweeps the map/reduce slot configuration of the DynamicMR
// testbed (9 nodes × 12 slots) under static slots and both DHSAs.
func dynamicMRFig8(ctx context.Context, env *Env) (*Output, error) {
	configs := Pick(env, []int{1, 6, 11}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
	seeds := Pick(env, 1, 3)
	specs := []string{slots.NameMRv1Static, slots.NamePIDHSA, slots.NamePDDHSA}
	var b strings.Builder
	var figs []Figure
	for _, jobs := range Pick(env, []int{1}, []int{1, 5}) {
		t := newTable("map/reduce slots", "static (s)", "PI-DHSA (s)", "PD-DHSA (s)", "static / PI-DHSA", "static / PD-DHSA")
		ss := make([]series, len(specs))
		for k, s := range specs {
			ss[k].name = s
		}
		worstStatic, bestStatic := 0.0, 0.0
		var worstCfg string
		for _, m := range configs {
			row := make([]float64, len(specs))
			for k, s := range specs {
				mk, _, err := hbMean(ctx, env, func() (*sim.ClusterScenario, error) {
					return sim.DynamicMRScenario(fmt.Sprintf("dynamicmr-%d-jobs-%d/%d", jobs, m, 12-m), jobs, m), nil
				}, s, seeds)
				if err != nil {
					return nil, err
				}
				row[k] = mk
				ss[k].x, ss[k].y = append(ss[k].x, float64(m)), append(ss[k].y, mk)
			}
			if row[0] > worstStatic {
				worstStatic, worstCfg = row[0], fmt.Sprintf("%d/%d", m, 12-m)
			}
			if bestStatic == 0 || row[0] < bestStatic {
				bestStatic = row[0]
			}
			t.add(fmt.Sprintf("%d/%d", m, 12-m), num(row[0]), num(row[1]), num(row[2]), fmt.Sprintf("%.2f×", row[0]/row[1]), fmt.Sprintf("%.2f×", row[0]/row[2]))
			env.Logf("%d jobs, %d/%d: static %.1f, PI %.1f, PD %.1f", jobs, m, 12-m, row[0], row[1], row[2])
		}
		fmt.Fprintf(&b, "**%d job(s)** (`dynamicmr-sort` / `dynamicmr-batch-%d` setting, mean makespan over %d seeds). Static slots: worst configuration %s, %.2f× the best.\n\n",
			jobs, jobs, seeds, worstCfg, worstStatic/bestStatic)
		b.WriteString(t.String())
		b.WriteString("\n")
		p, err := linePlot(fmt.Sprintf("DynamicMR Fig. 8: makespan vs slot configuration (%d jobs)", jobs), "map slots per node (of 12)", "makespan (s)", ss)
		if err != nil {
			return nil, err
		}
		figs = append(figs, Figure{Name: fmt.Sprintf("dynamicmr-fig8-%djobs", jobs), Caption: fmt.Sprintf("Makespan over map/reduce slot configurations, %d job(s)", jobs), Plot: p})
	}
	b.WriteString("\n**Paper vs optd.** The paper (Fig. 8, Sort) finds static Hadoop about 1.8× slower at its worst configuration " +
		"than at its best, DHSA nearly insensitive to the configuration, and DHSA about 2× faster than static slots at the worst " +
		"configuration (1/11). For one job optd reproduces the insensitivity of both DHSAs; the gap to static slots at 1/11 is " +
		"larger than 2× because the simulator has no shuffle network or disk contention: with one map slot per node the " +
		"static cluster's map phase is purely slot-bound (160 maps in 9 slots), while in the paper's testbed other " +
		"bottlenecks cap what the borrowed slots can give. For a batch of 5 jobs PI-DHSA is less flat: with slow-start at " +
		"5% every job's reduces are requested early and count in N_R, so at 1/11 N_R is close to S_R and Case 2 lends only " +
		"S_R − N_R slots while those reduces wait for map output; PD-DHSA, which borrows per pool on each heartbeat, stays " +
		"flatter. The paper's rule has the same property; its Fig. 8 runs single benchmarks.\n")
	return &Output{Markdown: b.String(), Figures: figs}, nil
}

// paperSetup rebuilds a stealing scenario with what paper 003 §IV-A states
// and the built-in scenario leaves out: each grep map "tuned to run
// approximately for 5 minutes" (work uniform on ±20% of 300 s), nodes with
// 7 cores (the built-in gives 8 vcores, one per map and reduce slot, so a
// map-only job always leaves a core to steal), all in one rack ("all nodes
// were on the same rack"), and Amdahl parallel fraction p. p = 0.875 is the
// value at which 7 threads give the 4× the paper measured for its
// multithreaded reduce tasks (§IV-C): 1/((1−p) + p/7) = 4. A later job's
// submission time scales with the task length (×15).
func paperSetup(p float64) func(string) func() (*sim.ClusterScenario, error) {
	return func(name string) func() (*sim.ClusterScenario, error) {
		return func() (*sim.ClusterScenario, error) {
			sc, err := sim.BuiltinCluster(name)
			if err != nil {
				return nil, err
			}
			work, err := models.DecodeDist([]byte(`{"kind":"uniform","min":240,"max":360}`), "", "work")
			if err != nil {
				return nil, err
			}
			for i := range sc.Jobs {
				sc.Jobs[i].MapWork, sc.Jobs[i].ParallelFraction = work, p
				sc.Jobs[i].SubmitS *= 15
			}
			v := sc.Cluster.Resources.Index(models.ResourceVCores)
			for i := range sc.Cluster.Nodes {
				sc.Cluster.Nodes[i].Rack = "rack1"
				if v >= 0 {
					sc.Cluster.Nodes[i].Capacity[v] = 7
				}
			}
			sc.Name += fmt.Sprintf("-paper-p%g", p)
			return sc, nil
		}
	}
}

// stealingAndBASE: execution time of map-only grep vs utilization with and
// without resource stealing, and the wasted speculative tasks BASE saves.
// The Hadoop baseline is FIFO with Hadoop 1's per-node map cap
// ("load-balance", which spreads a job's maps over the nodes as the paper
// observes, §IV-A) and Hadoop's default speculation.
func stealingAndBASE(ctx context.Context, env *Env) (*Output, error) {
	seeds := Pick(env, 1, 3)
	utils := []int{25, 50, 75, 90}
	paper := map[int]string{25: "64%", 50: "32%", 75: "13%", 90: "6%"}
	modes := Pick(env, []string{"even", "ltm"}, []string{"even", "fcm", "stlm", "ltlm", "stm", "ltm"})
	const hadoop = "fifo+" + filter.NameLoadBalance
	baseSpec := hadoop + "+" + speculation.NameSpeculationHadoop
	setups := []struct {
		label    string
		build    func(string) func() (*sim.ClusterScenario, error)
		allModes bool
	}{{"paper setup", paperSetup(0.875), true}, {"paper setup, p = 0.5", paperSetup(0.5), false}, {"built-in", builtin, false}}
	var b strings.Builder
	fmt.Fprintf(&b, "Map-only grep on 20 nodes × 7 map slots (`stealing-grep-U`); Hadoop = FIFO + `load-balance` + "+
		"`speculation-hadoop`, stealing adds `resource-stealing-MODE`; mean makespan over %d seeds; *reduction* is "+
		"1 − time with stealing / time without. Setups: *paper setup* is what the paper states (5-minute maps, 7 cores "+
		"per node, one rack) with Amdahl p = 0.875, derived from the paper's own 4×-with-7-threads measurement, not "+
		"fitted; *p = 0.5* is the same with the simulator's default p; *built-in* is the `stealing-grep-U` scenario as "+
		"it ships (20 s maps, 8 vcores per node, two racks, p = 0.5).\n\n", seeds)
	head := []string{"utilization", "paper (Even)"}
	var ss []series
	for _, st := range setups {
		for mi, m := range modes {
			if mi > 0 && !st.allModes {
				break
			}
			head = append(head, st.label+": "+m)
			ss = append(ss, series{name: st.label + " " + m, dashed: !st.allModes})
		}
	}
	t := newTable(head...)
	for _, u := range utils {
		row := []any{fmt.Sprintf("%d%%", u), paper[u]}
		k := 0
		for _, st := range setups {
			build := st.build(fmt.Sprintf("stealing-grep-%d", u))
			before, _, err := hbMean(ctx, env, build, baseSpec, seeds)
			if err != nil {
				return nil, err
			}
			for mi, m := range modes {
				if mi > 0 && !st.allModes {
					break
				}
				after, _, err := hbMean(ctx, env, build, hadoop+"+"+sharing.NameResourceStealingPrefix+m+"+"+speculation.NameSpeculationHadoop, seeds)
				if err != nil {
					return nil, err
				}
				red := reduction(before, after)
				row = append(row, pct(red))
				ss[k].x, ss[k].y = append(ss[k].x, float64(u)), append(ss[k].y, 100*red)
				k++
				env.Logf("grep %d%% (%s): %s %.1f → %.1f s", u, st.label, m, before, after)
			}
		}
		t.add(row...)
	}
	b.WriteString(t.String())
	p, err := linePlot("Resource stealing: execution-time reduction vs utilization", "map slot utilization (%)", "reduction (%)", ss)
	if err != nil {
		return nil, err
	}
	// BASE: wasted copies with and without, in the paper's setup at high
	// utilization and with straggler nodes (with 20 s maps Hadoop never
	// speculates: an attempt must run 60 s first).
	bt := newTable("scenario", "Hadoop: launched / wasted", "BASE: launched / wasted", "wasted removed", "makespan Hadoop → BASE (s)", "paper")
	paperBASE := map[string]string{"stealing-grep-75": "almost all", "stealing-grep-90": "almost all", "stealing-stragglers-2": "nearly all", "stealing-stragglers-4": "20-50%"}
	var stragglerRemoved []float64 // share of the wasted copies BASE removes with straggler nodes
	for _, name := range []string{"stealing-grep-75", "stealing-grep-90", "stealing-stragglers-2", "stealing-stragglers-4"} {
		build := paperSetup(0.875)(name)
		mh, sh, err := hbMean(ctx, env, build, baseSpec, seeds)
		if err != nil {
			return nil, err
		}
		mb, sb, err := hbMean(ctx, env, build, hadoop+"+"+speculation.NameBASE, seeds)
		if err != nil {
			return nil, err
		}
		removed := "n/a"
		if sh.Wasted > 0 {
			r := reduction(float64(sh.Wasted), float64(sb.Wasted))
			removed = pct(r)
			if strings.HasPrefix(name, "stealing-stragglers-") {
				stragglerRemoved = append(stragglerRemoved, r)
			}
		}
		bt.add(name, fmt.Sprintf("%d / %d", sh.Launched, sh.Wasted), fmt.Sprintf("%d / %d", sb.Launched, sb.Wasted), removed,
			fmt.Sprintf("%s → %s", num(mh), num(mb)), paperBASE[name])
		env.Logf("%s: wasted %d → %d", name, sh.Wasted, sb.Wasted)
	}
	b.WriteString("\n**BASE** in the paper setup (Hadoop vs FIFO + `load-balance` + `base`; copies summed over the seeds):\n\n")
	b.WriteString(bt.String())
	b.WriteString(stealingDiscussion(stealingFacts{
		utils: utils, modes: modes, paperModes: ss[:len(modes)], halfP: ss[len(modes)], removed: stragglerRemoved,
	}))
	return &Output{Markdown: b.String(), Figures: []Figure{{Name: "stealing-reduction", Caption: "Execution-time reduction by resource stealing over utilization (dashed: the other setups under Even)", Plot: p}}}, nil
}

// stealingFacts are the figures of the run the discussion cites.
type stealingFacts struct {
	utils      []int
	modes      []string
	paperModes []series // reduction (%) by utilization, one per mode, paper setup
	halfP      series   // the same under Even with p = 0.5
	removed    []float64
}

// stealingDiscussion compares optd's figures with the paper's; every number
// it states about optd comes from facts.
func stealingDiscussion(f stealingFacts) string {
	even := f.paperModes[0]
	gainAtLowest := "no gain"
	if even.y[0] > 0 {
		gainAtLowest = fmt.Sprintf("%.0f%% of the gain", 100*f.halfP.y[0]/even.y[0])
	}
	var ltmBest []string
	for ui, u := range f.utils {
		best := 0
		for m := range f.paperModes {
			if f.paperModes[m].y[ui] > f.paperModes[best].y[ui] {
				best = m
			}
		}
		if f.modes[best] == "ltm" {
			ltmBest = append(ltmBest, fmt.Sprintf("%d%%", u))
		}
	}
	ltm := "LTM is the best mode at no utilization here"
	if len(ltmBest) > 0 {
		ltm = "LTM is the best mode here only at " + strings.Join(ltmBest, ", ")
	}
	removed := "the BASE table shows what it removes"
	if len(f.removed) > 0 {
		lo, hi := slices.Min(f.removed), slices.Max(f.removed)
		removed = "removes " + pct(lo) + " of the wasted ones"
		if pct(lo) != pct(hi) {
			removed = "removes " + strings.TrimSuffix(pct(lo), "%") + "-" + pct(hi) + " of the wasted ones"
		}
	}
	return fmt.Sprintf("\n**Paper vs optd.** In the paper's setup optd's Even reductions track the paper's "+
		"(64, 32, 13, 6%% at 25, 50, 75, 90%%): stealing helps most when most slots are idle. Two things the paper's text "+
		"states matter and the built-in scenario lacks: Hadoop 1's per-node map cap (`load-balance`), which spreads one "+
		"job's maps over all nodes so that every node has idle cores to lend (without it FIFO fills the first nodes' slots "+
		"and stealing has little to give), and 5-minute maps, next to which the one heartbeat (3 s) before a grant is "+
		"negligible. The speed model's p sets the size of the gain (p = 0.5 caps a task at 2×, which gives %s at %d%%); "+
		"p = 0.875 comes from the paper's multithreaded reduce measurement, not from this figure. Unlike the paper, %s: "+
		"in a single map-only job every running map is at a similar "+
		"point, so which one gets the cores matters less than how many are given.\n\n"+
		"BASE removes a large share of the wasted copies, but not \"almost all\" on grep without "+
		"stragglers. In optd a map's work varies ±20%% by itself (the scenario's draw), so Hadoop's detector flags maps "+
		"that are slow because their own work is larger, and a copy redoes that same work; BASE estimates the copy from the "+
		"rates of *other* maps and so believes some of these copies beneficial. In the paper's grep the splits were equal "+
		"and slowness was mostly contention, which a copy escapes and BASE's estimate captures. With straggler nodes "+
		"(a real, external cause) BASE keeps the useful copies and %s (paper: nearly all "+
		"with 2 stragglers, 20-50%% with 4); the table gives the makespans with and without it.\n",
		gainAtLowest, f.utils[0], ltm, removed)
}

// dynamicAdjustFig5 compares job completion time under YARN's FIFO, FIFO
// with LATE, and FIFO with DynamicAdjust on the skewed jobs of paper 004.
func dynamicAdjustFig5(ctx context.Context, env *Env) (*Output, error) {
	seeds := Pick(env, 1, 5)
	paper := map[string]string{"dynamicadjust-invertedindex": "32.86%", "dynamicadjust-pagerank": "37.27%"}
	t := newTable("scenario", "YARN FIFO (s)", "FIFO + LATE (s)", "FIFO + DynamicAdjust (s)", "reduction", "paper")
	var b strings.Builder
	for _, name := range []string{"dynamicadjust-invertedindex", "dynamicadjust-pagerank"} {
		var m [3]float64
		for k, spec := range []string{"fifo", "fifo+" + speculation.NameLATE, "fifo+" + sharing.NameDynamicAdjust} {
			v, _, err := hbMean(ctx, env, builtin(name), spec, seeds)
			if err != nil {
				return nil, err
			}
			m[k] = v
		}
		t.add(name, num(m[0]), num(m[1]), num(m[2]), pct(reduction(m[0], m[2])), paper[name])
		env.Logf("%s: %.1f / %.1f / %.1f", name, m[0], m[1], m[2])
	}
	fmt.Fprintf(&b, "One skewed job on 20 workers ⟨8 vcores, 7 GB⟩, mean completion time over %d seeds.\n\n", seeds)
	b.WriteString(t.String())
	b.WriteString("\n**Paper vs optd.** As in the paper, LATE gains nothing on skew (a copy redoes the same heavy work) and " +
		"DynamicAdjust shortens the job by giving the skewed tasks the idle vcores. The size of the gain depends on the " +
		"speed model (Amdahl p = 0.5: a task runs at most 2× faster however many cores it gets) and on the built-in skew " +
		"factors, which the paper does not publish; optd's figure is what that model gives, not a fit.\n")
	return &Output{Markdown: b.String()}, nil
}

// sepbFig9 sweeps SEPB's percentageOfJobsCheckedForPendingTasks on a
// DynamicMR batch (PI-DHSA, 6/6 slots) with two of the nine nodes at a
// third of the normal speed (the built-in DynamicMR scenarios have no
// straggler, so nothing is ever speculated there), and shows the kill rule
// on and off.
func sepbFig9(ctx context.Context, env *Env) (*Output, error) {
	seeds := Pick(env, 1, 3)
	pcts := Pick(env, []float64{0, 1}, []float64{0, 0.2, 0.4, 0.6, 0.8, 1})
	t := newTable("jobs", "PI-DHSA + LATE (s)", "SEPB, no kill: "+joinPcts(pcts), "SEPB with kill rule: "+joinPcts(pcts))
	var maxChange [2]float64 // largest |makespan / makespan at percentage 0 − 1|, without and with kills
	for _, jobs := range Pick(env, []int{5}, []int{5, 10}) {
		build := func() (*sim.ClusterScenario, error) {
			sc := sim.DynamicMRScenario(fmt.Sprintf("dynamicmr-batch-%d-stragglers", jobs), jobs, 6)
			sc.Stragglers = []sim.Straggler{{Node: "slave1", Speed: 1.0 / 3}, {Node: "slave2", Speed: 1.0 / 3}}
			return sc, nil
		}
		late, _, err := hbMean(ctx, env, build, slots.NamePIDHSA+"+"+speculation.NameLATE, seeds)
		if err != nil {
			return nil, err
		}
		cells := [2][]string{}
		var means [2][]float64
		for k, kills := range []float64{0, 1} {
			for _, pct := range pcts {
				var sum float64
				for s := range seeds {
					sc, _ := build()
					p, err := policy.NewPipeline(slots.NamePIDHSA+"+"+speculation.NameSEPB, policy.HeartbeatConfig{Seed: env.Seed + uint64(s)})
					if err != nil {
						return nil, err
					}
					if err := p.SetParam("sepb.percentage_of_jobs_checked_for_pending_tasks", pct); err != nil {
						return nil, err
					}
					if err := p.SetParam("sepb.max_kills_per_task", kills); err != nil {
						return nil, err
					}
					r, err := sim.RunCluster(ctx, sc, p, sim.ClusterOptions{Seed: env.Seed + uint64(s)})
					if err != nil {
						return nil, err
					}
					sum += r.MakespanS
				}
				cells[k] = append(cells[k], num(sum/float64(seeds)))
				means[k] = append(means[k], sum/float64(seeds))
			}
		}
		t.add(jobs, num(late), strings.Join(cells[0], " / "), strings.Join(cells[1], " / "))
		for k := range means {
			for _, m := range means[k][1:] {
				maxChange[k] = max(maxChange[k], math.Abs(m/means[k][0]-1))
			}
		}
		env.Logf("%d jobs: LATE %.1f, SEPB %v / %v", jobs, late, cells[0], cells[1])
	}
	var b strings.Builder
	fmt.Fprintf(&b, "DynamicMR batch, 9 nodes with 6 map / 6 reduce slots, two nodes at a third of the speed, PI-DHSA; mean makespan over %d seeds.\n\n", seeds)
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\n**Paper vs optd.** The paper (Fig. 9a) gains 3-10%% over percentage 0 with 60-100%%. In optd the percentage changes the makespan by at most %s "+
		"with kills on and %s without: optd's heartbeat pipeline already serves every pending task before any speculative copy (stage 2 "+
		"before stage 3), which is what SEPB adds to Hadoop, where a job's speculative tasks could take a slot before a later "+
		"job's pending ones (the Fig. 5 example, reproduced in policy's unit test on a single heartbeat). SEPB's other half, "+
		"killing an attempt that ran twice the mean task time, costs makespan here: optd's stragglers are slow, never hung "+
		"(the paper's hard stragglers), so a kill throws away progress that a copy would have kept.\n", pct(maxChange[1]), pct(maxChange[0]))
	return &Output{Markdown: b.String()}, nil
}

func joinPcts(ps []float64) string {
	return joinEach(ps, func(p float64) string { return fmt.Sprintf("%g%%", 100*p) }, " / ")
}

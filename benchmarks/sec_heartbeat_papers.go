package benchmarks

import (
	"context"
	"fmt"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// This file reproduces the slot, speculation and sharing results of
// DynamicMR (paper 000, Fig. 8), resource stealing and BASE (paper 003,
// Figs. 2-3) and DynamicAdjust (paper 004, Fig. 5) on the cluster
// simulator's built-in scenarios. Nothing here is fitted to a published
// figure: every number is the mean over the seeds of the run.

// hbRun simulates one scenario under one policy spec and seed.
func hbRun(ctx context.Context, sc *sim.ClusterScenario, spec string, seed uint64) (*sim.ClusterResult, error) {
	p, err := policy.NewPipeline(spec, policy.HeartbeatConfig{Seed: seed})
	if err != nil {
		return nil, err
	}
	r, err := sim.RunCluster(ctx, sc, p, sim.ClusterOptions{Seed: seed})
	if err != nil {
		return nil, fmt.Errorf("%s under %s: %w", sc.Name, spec, err)
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
	specs := []string{policy.NameMRv1Static, policy.NamePIDHSA, policy.NamePDDHSA}
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
		"configuration (1/11). optd reproduces the insensitivity of both DHSAs; the gap to static slots at 1/11 is larger " +
		"than 2× because the simulator has no shuffle network or disk contention: with one map slot per node the static " +
		"cluster's map phase is purely slot-bound (160 maps in 9 slots), while in the paper's testbed other bottlenecks cap " +
		"what the extra borrowed slots can give.\n")
	return &Output{Markdown: b.String(), Figures: figs}, nil
}

// paperLength rebuilds a stealing scenario with the paper's task length
// (each grep map "tuned to run approximately for 5 minutes", paper 003
// §IV-A: work uniform on ±20% of 300 s) and Amdahl parallel fraction
// p = 0.875, the value at which 7 threads give the 4× the paper measured
// for its multithreaded reduce tasks (§IV-C): 1/((1−p) + p/7) = 4. A second
// job's submission is scaled from 10 s to 150 s with the task length.
func paperLength(name string) func() (*sim.ClusterScenario, error) {
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
			sc.Jobs[i].MapWork, sc.Jobs[i].ParallelFraction = work, 0.875
			sc.Jobs[i].SubmitS *= 15
		}
		sc.Name += "-5min"
		return sc, nil
	}
}

// stealingAndBASE: execution time of map-only grep vs utilization with and
// without resource stealing, and the wasted speculative tasks BASE saves.
func stealingAndBASE(ctx context.Context, env *Env) (*Output, error) {
	seeds := Pick(env, 1, 3)
	utils := []int{25, 50, 75, 90}
	paper := map[int]string{25: "64%", 50: "32%", 75: "13%", 90: "6%"}
	modes := Pick(env, []string{"even", "ltm"}, []string{"even", "fcm", "stlm", "ltlm", "stm", "ltm"})
	const baseSpec = "fifo+" + policy.NameSpeculationHadoop
	var b strings.Builder
	fmt.Fprintf(&b, "Map-only grep on 20 nodes × 7 map slots (`stealing-grep-U`), FIFO with Hadoop's default speculation, "+
		"mean makespan over %d seeds; *reduction* is 1 − time with stealing / time without. Two task lengths: the built-in "+
		"scenario (20 s maps, Amdahl p = 0.5) and the paper's 5-minute maps (p = 0.875, see paperLength in the source).\n\n", seeds)
	head := []string{"utilization", "paper (Even)"}
	for _, v := range []string{"20 s", "5 min"} {
		for _, m := range modes {
			head = append(head, v+": "+m)
		}
	}
	t := newTable(head...)
	// series: the built-in scenario under Even (dashed), then the 5-minute
	// scenario under every mode
	ss := []series{{name: "20 s even", dashed: true}}
	for _, m := range modes {
		ss = append(ss, series{name: "5 min " + m})
	}
	variants := []struct {
		label string
		build func(string) func() (*sim.ClusterScenario, error)
	}{{"20 s", builtin}, {"5 min", paperLength}}
	for _, u := range utils {
		row := []any{fmt.Sprintf("%d%%", u), paper[u]}
		for vi, v := range variants {
			build := v.build(fmt.Sprintf("stealing-grep-%d", u))
			before, _, err := hbMean(ctx, env, build, baseSpec, seeds)
			if err != nil {
				return nil, err
			}
			for mi, m := range modes {
				after, _, err := hbMean(ctx, env, build, "fifo+"+policy.NameResourceStealingPrefix+m+"+"+policy.NameSpeculationHadoop, seeds)
				if err != nil {
					return nil, err
				}
				red := reduction(before, after)
				row = append(row, pct(red))
				k := -1
				switch {
				case vi == 1:
					k = 1 + mi
				case mi == 0:
					k = 0
				}
				if k >= 0 {
					ss[k].x, ss[k].y = append(ss[k].x, float64(u)), append(ss[k].y, 100*red)
				}
				env.Logf("grep %d%% (%s): %s %.1f → %.1f s", u, v.label, m, before, after)
			}
		}
		t.add(row...)
	}
	b.WriteString(t.String())
	p, err := linePlot("Resource stealing: execution-time reduction vs utilization", "map slot utilization (%)", "reduction (%)", ss)
	if err != nil {
		return nil, err
	}
	// BASE: wasted copies with and without, on the 5-minute grep at high
	// utilization and with straggler nodes (with 20 s maps Hadoop never
	// speculates: an attempt must run 60 s first).
	bt := newTable("scenario", "Hadoop: launched / wasted", "BASE: launched / wasted", "wasted removed", "makespan Hadoop → BASE (s)", "paper")
	paperBASE := map[string]string{"stealing-grep-75": "almost all", "stealing-grep-90": "almost all", "stealing-stragglers-2": "nearly all", "stealing-stragglers-4": "20-50%"}
	for _, name := range []string{"stealing-grep-75", "stealing-grep-90", "stealing-stragglers-2", "stealing-stragglers-4"} {
		build := paperLength(name)
		mh, sh, err := hbMean(ctx, env, build, baseSpec, seeds)
		if err != nil {
			return nil, err
		}
		mb, sb, err := hbMean(ctx, env, build, "fifo+"+policy.NameBASE, seeds)
		if err != nil {
			return nil, err
		}
		removed := "n/a"
		if sh.Wasted > 0 {
			removed = pct(reduction(float64(sh.Wasted), float64(sb.Wasted)))
		}
		bt.add(name+" (5 min)", fmt.Sprintf("%d / %d", sh.Launched, sh.Wasted), fmt.Sprintf("%d / %d", sb.Launched, sb.Wasted), removed,
			fmt.Sprintf("%s → %s", num(mh), num(mb)), paperBASE[name])
		env.Logf("%s: wasted %d → %d", name, sh.Wasted, sb.Wasted)
	}
	b.WriteString("\n**BASE** (FIFO + Hadoop's speculation vs FIFO + BASE, copies summed over the seeds):\n\n")
	b.WriteString(bt.String())
	b.WriteString("\n**Paper vs optd.** Stealing helps most at low utilization in both, and LTM is among the best strategies. " +
		"optd's reductions are smaller than the paper's 64/32% at low utilization because the speed model is Amdahl's law " +
		"with p = 0.5 (at most 2×) in the built-in scenario, and because grants follow a start by one heartbeat (3 s, a large " +
		"share of a 20 s map); with the paper's 5-minute maps and p = 0.875 the gains grow. The makespan of one map-only job " +
		"is the finish of its slowest map, which an off-rack read (30% more work) or a ±20% work draw dominates: that, not " +
		"stealing, makes optd's reduction at 90% larger than the paper's 6% (its tail runs on half-empty nodes, where " +
		"stealing gives the last maps several cores). BASE removes most wasted copies with straggler nodes, as in the paper; " +
		"on grep without stragglers a copy in optd re-does the same work on an equally fast node and can only win against an " +
		"off-rack original, so what BASE keeps there are copies it wrongly believes beneficial — its estimate takes the " +
		"rates of *other* tasks, and a task that is slow because its own input is larger looks like a straggler (the " +
		"limitation the paper itself notes for four stragglers).\n")
	return &Output{Markdown: b.String(), Figures: []Figure{{Name: "stealing-reduction", Caption: "Execution-time reduction by resource stealing over utilization (dashed: 20 s maps; solid: 5-minute maps)", Plot: p}}}, nil
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
		for k, spec := range []string{"fifo", "fifo+" + policy.NameLATE, "fifo+" + policy.NameDynamicAdjust} {
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

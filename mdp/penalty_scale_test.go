package mdp

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// envInt is the integer of environment variable name, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestPenaltyScale measures the penalized bound at scale (long:
// OPTD_PENALTY_SCALE=1; `make penalty-scale`): on the Fig. 9 setting
// beyond the paper (K = 100, 1000 distinct slot costs) at ρ = 0.6 and 0.9
// (OPTD_PENALTY_RHOS), θ fitted on OPTD_PENALTY_STEPS short training runs
// of the coarse cluster, then evaluated with that θ on fresh replications
// of OPTD_PENALTY_JOBS jobs: the plain and the penalized Lagrangian per
// job, the lift, the fitted policies' and greedy's mean costs on the same
// replications, and each policy's certified gap (mean cost over mean
// bound; the penalized bound holds in expectation, not per replication);
// then the same means controlled by the queue's martingale (controlledMean,
// a workload scenario only), with their narrower half-widths. With
// OPTD_PENALTY_VARIANTS (names of penaltyVariants, comma-separated) other
// features are fitted and evaluated beside on the same replications, e.g.
// "penalized,big-others-finer": FitPenalty's features and those with the
// big-others terms and the finer class grid, their difference paired per
// replication.
func TestPenaltyScale(t *testing.T) {
	if os.Getenv("OPTD_PENALTY_SCALE") == "" {
		t.Skip("set OPTD_PENALTY_SCALE=1")
	}
	ctx := context.Background()
	paths := []string{"../search/testdata/fig9-rho0.6.json", "../search/testdata/fig9-rho0.9.json"}
	if v := os.Getenv("OPTD_PENALTY_SCENARIOS"); v != "" {
		paths = strings.Split(v, ",")
	}
	steps := envInt("OPTD_PENALTY_STEPS", 600)
	jobs := envInt("OPTD_PENALTY_JOBS", 10000)
	reps := envInt("OPTD_PENALTY_REPS", 3)
	lsteps := envInt("OPTD_PENALTY_LSTEPS", DefaultLagrangeIterations)
	// OPTD_PENALTY_LBOX=s also prints each Lagrangian's best bound within
	// its first s seconds (the report's pathwise bounds' box: 20 s per replication).
	lbox := time.Duration(envInt("OPTD_PENALTY_LBOX", 0)) * time.Second
	// OPTD_PENALTY_LCHECK=n also prints each Lagrangian's best bound at
	// its step n (of OPTD_PENALTY_LSTEPS: what more steps add, paired).
	lcheck := envInt("OPTD_PENALTY_LCHECK", 0)
	for _, rho := range paths {
		s, err := sim.LoadScenario(rho)
		if err != nil {
			t.Fatal(err)
		}
		s.WarmupJobs, s.Replications = 1000, reps
		if s.Trace == nil || jobs < s.Jobs {
			s.Jobs = jobs
		}
		resample := s.Trace != nil && os.Getenv("OPTD_PENALTY_RESAMPLE") != ""
		if resample {
			fmt.Printf("%s: the trace's arrivals with (X, R) drawn i.i.d. from its empirical law (a model, not the trace)\n", rho)
		}
		// The penalties compared on the same replications: today's
		// features, and those of OPTD_PENALTY_VARIANTS beside them.
		type fitted struct {
			name string
			pen  *Penalty
		}
		var pens []fitted
		// OPTD_PENALTY_WARM_FROM: the fits start from θ fitted first on
		// that scenario (e.g. the next lower load) in
		// OPTD_PENALTY_WARM_STEPS steps (default 100), PenaltyFit.start.
		var start *Penalty
		if from := os.Getenv("OPTD_PENALTY_WARM_FROM"); from != "" {
			ws, err := sim.LoadScenario(from)
			if err != nil {
				t.Fatal(err)
			}
			st := time.Now()
			wsteps := envInt("OPTD_PENALTY_WARM_STEPS", 100)
			if start, err = FitPenalty(ctx, ws, PenaltyFit{Steps: wsteps, Jobs: envInt("OPTD_PENALTY_FIT_JOBS", 0)}); err != nil {
				t.Fatal(err)
			}
			fmt.Printf("%s: start θ fitted on %s, %d steps in %v (fit LP %.3f/job)\n", rho, from, wsteps, time.Since(st).Round(time.Second), start.Fit)
		}
		for _, name := range variantNames() {
			v, ok := penaltyVariants[name]
			if !ok {
				t.Fatalf("OPTD_PENALTY_VARIANTS: unknown variant %q", name)
			}
			st := time.Now()
			pen, err := FitPenalty(ctx, s, PenaltyFit{Steps: steps, Jobs: envInt("OPTD_PENALTY_FIT_JOBS", 0), WarmupJobs: v.warmupJobs, ResampledMarks: resample, start: start, variant: v.fit})
			if err != nil {
				t.Fatal(err)
			}
			pen.Lagrange = LagrangeOptions{Iterations: lsteps}
			fmt.Printf("%s: %s: fit %d steps in %v (fit LP %.3f/job, %d features)\n", rho, name, steps*max(v.fit.moreSteps, 1), time.Since(st).Round(time.Second), pen.Fit, pen.basis.nFeat)
			pens = append(pens, fitted{name, pen})
		}
		names := []string{"greedy", "state-threshold"}
		var fs []sim.NamedFactory
		for _, n := range names {
			fs = append(fs, sim.NamedFactory{Name: n, New: func(seed uint64) (policy.Placement, error) {
				return policy.NewPlacement(n, policy.PlacementConfig{Seed: seed})
			}})
		}
		var plain, cv []float64
		penal := make([][]float64, len(pens))
		cost := map[string][]float64{}
		capacity := -1
		if s.MaxWaiting >= 0 {
			capacity = s.K + s.MaxWaiting
		}
		for rep := range reps {
			r, err := replicate(ctx, s, rep, fs, resample)
			if err != nil {
				t.Fatal(err)
			}
			var counted []sim.JobRecord
			for _, j := range r.Records {
				if j.Counted {
					counted = append(counted, j)
				}
			}
			N := float64(len(counted))
			for _, n := range names {
				cost[n] = append(cost[n], r.Results[n].MeanCost)
			}
			st := time.Now()
			o, boxed := boxedLagrange(lsteps, lbox, lcheck)
			p0, err := HindsightLagrangianOfRecords(ctx, counted, s.SlotCosts, o)
			if err != nil {
				t.Fatal(err)
			}
			t0 := time.Since(st)
			plain = append(plain, p0/N)
			if s.Trace == nil {
				cv = append(cv, queueMartingale(r.Records, s.ArrivalRate, s.ServiceRate, capacity))
			}
			fmt.Printf("  rep %d (%d jobs): plain Lagrangian %.3f (%v%s)", rep, len(counted), p0/N, t0.Round(time.Millisecond), boxed(N))
			for k, f := range pens {
				runtime.GC()
				var m0, m1 runtime.MemStats
				runtime.ReadMemStats(&m0)
				st = time.Now()
				o, boxed := boxedLagrange(lsteps, lbox, lcheck)
				f.pen.Lagrange = o
				p1, res, err := f.pen.boundLagrangian(ctx, r.Records)
				if err != nil {
					t.Fatal(err)
				}
				t1 := time.Since(st)
				runtime.ReadMemStats(&m1)
				penal[k] = append(penal[k], p1/N)
				fmt.Printf(", %s %.3f (%v, %d steps, %.0f MiB allocated%s)", f.name, p1/N, t1.Round(time.Millisecond), res.Steps,
					float64(m1.TotalAlloc-m0.TotalAlloc)/(1<<20), boxed(N))
			}
			fmt.Printf(", greedy %.3f, state-threshold %.3f\n", cost["greedy"][rep], cost["state-threshold"][rep])
		}
		mp, hp := sim.MeanCI95(plain)
		for k, f := range pens {
			mz, hz := sim.MeanCI95(penal[k])
			fmt.Printf("%s: plain %.3f ± %.3f, %s %.3f ± %.3f (lift %+.2f%%)", rho, mp, hp, f.name, mz, hz, 100*(mz/mp-1))
			for _, n := range names {
				mc, _ := sim.MeanCI95(cost[n])
				fmt.Printf(", %s %.3f gap %.1f%% (plain %.1f%%)", n, mc, 100*(mc/mz-1), 100*(mc/mp-1))
			}
			if k > 0 {
				d, hd := sim.MeanCI95(paired(penal[0], penal[k]))
				fmt.Printf("; %s − %s %+.3f ± %.3f per job", pens[0].name, f.name, d, hd)
			}
			fmt.Println()
		}
		if cv == nil {
			continue
		}
		// The same with the queue's control variate (penalty_cv.go).
		cp, chp := controlledMean(plain, cv)
		for k, f := range pens {
			cz, chz := controlledMean(penal[k], cv)
			fmt.Printf("%s, controlled (queue martingale, %d replications): plain %.3f ± %.3f, %s %.3f ± %.3f", rho, len(cv), cp, chp, f.name, cz, chz)
			for _, n := range names {
				mc, hc := controlledMean(cost[n], cv)
				fmt.Printf(", %s %.3f ± %.3f gap %.1f%% (plain %.1f%%)", n, mc, hc, 100*(mc/cz-1), 100*(mc/cp-1))
			}
			fmt.Println()
		}
	}
}

// boxedLagrange is the Lagrangian's options of steps steps and, with box >
// 0, a reader of the best bound it had reached within box of its start
// (per job of n jobs, as ", within 20s 157.3 at step 231", or ", no step
// within 20s"; "" without a box and check). The start counts from the
// call. With check > 0 the reader also gives the best bound at step check
// (", at step 300 160.5").
func boxedLagrange(steps int, box time.Duration, check int) (LagrangeOptions, func(n float64) string) {
	o := LagrangeOptions{Iterations: steps}
	if box <= 0 && check <= 0 {
		return o, func(float64) string { return "" }
	}
	start := time.Now()
	best, at := math.Inf(-1), 0
	checked := math.Inf(-1)
	o.Progress = func(step int, b float64) {
		if box > 0 && time.Since(start) <= box {
			best, at = b, step
		}
		if step <= check {
			checked = b
		}
	}
	return o, func(n float64) string {
		out := ""
		if check > 0 {
			out = fmt.Sprintf(", at step %d %.3f", check, checked/n)
		}
		switch {
		case box <= 0:
		case at == 0:
			out += fmt.Sprintf(", no step within %v", box)
		default:
			out += fmt.Sprintf(", within %v %.3f at step %d", box, best/n, at)
		}
		return out
	}
}

// scaleVariant is a fit TestPenaltyScale can compare: the fit's
// experimental switches and its training runs' warm-up
// (PenaltyFit.WarmupJobs).
type scaleVariant struct {
	fit        penaltyVariant
	warmupJobs int
}

// penaltyVariants are the features TestPenaltyScale can compare
// (OPTD_PENALTY_VARIANTS, comma-separated; the first is the one the others
// are paired against).
var penaltyVariants = map[string]scaleVariant{
	"penalized":        {},
	"exact":            {fit: penaltyVariant{exactFit: true}},
	"big-others":       {fit: penaltyVariant{bigOthers: true}},
	"finer-classes":    {fit: penaltyVariant{classesPerDoubling: 3}},
	"big-others-finer": {fit: penaltyVariant{bigOthers: true, classesPerDoubling: 3}},
	"step-0.3":         {fit: penaltyVariant{stepScale: 3}},
	"step-0.03":        {fit: penaltyVariant{stepScale: 0.3}},
	"step-1":           {fit: penaltyVariant{stepScale: 10}},
	"step-0.2":         {fit: penaltyVariant{stepScale: 2}},
	"tied":             {fit: penaltyVariant{tied: true}},
	"fit-grid-4":       {fit: penaltyVariant{fitPerDoubling: 4}},
	"fit-grid-8":       {fit: penaltyVariant{fitPerDoubling: 8}},
	"tied-step-0.3":    {fit: penaltyVariant{tied: true, stepScale: 3}},
	// The exact fit's (fitExact).
	"coarse-exact":     {fit: penaltyVariant{exactFit: true, exactAfter: 1.0 / 3}},
	"exact-step-3":     {fit: penaltyVariant{exactFit: true, stepScale: 3}},
	"exact-step-0.5":   {fit: penaltyVariant{exactFit: true, stepScale: 0.5}},
	"exact-x2":         {fit: penaltyVariant{exactFit: true, moreSteps: 2}},
	"exact-x4":         {fit: penaltyVariant{exactFit: true, moreSteps: 4}},
	"exact-long":       {fit: penaltyVariant{exactFit: true, longerRuns: 2}},
	"exact-x2-long":    {fit: penaltyVariant{exactFit: true, moreSteps: 2, longerRuns: 2}},
	"exact-x2-tied":    {fit: penaltyVariant{exactFit: true, moreSteps: 2, tied: true}},
	"exact-warm":       {fit: penaltyVariant{exactFit: true}, warmupJobs: 1500},
	"warm":             {warmupJobs: 1500},
	"x2":               {fit: penaltyVariant{moreSteps: 2}},
	"avg-last-quarter": {fit: penaltyVariant{averageFrom: 0.75}},
	"x3":               {fit: penaltyVariant{moreSteps: 3}},
	"x4":               {fit: penaltyVariant{moreSteps: 4}},
	"x4-warm":          {fit: penaltyVariant{moreSteps: 4}, warmupJobs: 1500},
	// The departure terms of "Who leaves".
	"y-departures":         {fit: penaltyVariant{yDepartures: true}},
	"top-bin-departures":   {fit: penaltyVariant{binDepartures: 2}},
	"y-departures-x2":      {fit: penaltyVariant{yDepartures: true, moreSteps: 2}},
	"y-departures-tied":    {fit: penaltyVariant{yDepartures: true, tiedLeaves: true}},
	"top-bin-departures-1": {fit: penaltyVariant{binDepartures: 1}},
}

// variantNames is OPTD_PENALTY_VARIANTS, or "penalized" alone.
func variantNames() []string {
	if v := os.Getenv("OPTD_PENALTY_VARIANTS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"penalized"}
}

// paired is a − b element by element.
func paired(a, b []float64) []float64 {
	out := make([]float64, len(a))
	for k := range a {
		out[k] = a[k] - b[k]
	}
	return out
}

// replicate is s.RunReplication(ctx, rep, fs, true), or with resample the
// same on ResampledMarks(s, rep) (a trace's arrivals with its marks drawn
// i.i.d. from its empirical law).
func replicate(ctx context.Context, s *sim.Scenario, rep int, fs []sim.NamedFactory, resample bool) (*sim.Replication, error) {
	if !resample {
		return s.RunReplication(ctx, rep, fs, true)
	}
	seed := sim.ReplicationSeed(s.Seed, rep)
	out := &sim.Replication{Index: rep, Seed: seed, Results: map[string]*sim.Result{}}
	for k, nf := range fs {
		p, err := nf.New(sim.PolicySeed(seed))
		if err != nil {
			return nil, err
		}
		res, err := s.Model().Run(ctx, ResampledMarks(s, rep), p, sim.RunOptions{Warmup: s.WarmupJobs, Record: k == 0})
		if err != nil {
			return nil, err
		}
		if k == 0 {
			out.Records, res.Records = res.Records, nil
		}
		out.Results[nf.Name] = res
	}
	return out, nil
}

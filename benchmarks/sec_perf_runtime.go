package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/optd/optd/mdp"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/thresholds"
)

// perfSim measures the simulator's throughput on the Fig. 9 setting at the
// highest load (ρ = 0.6): events processed per second of one run of the
// reduce-placement queue under each policy.
func perfSim(ctx context.Context, env *Env) (*Output, error) {
	jobs := Pick(env, 5000, 50000)
	s, err := fig9Scenario(0.6, jobs, jobs/50, 1, env.Seed)
	if err != nil {
		return nil, err
	}
	minTime := Pick(env, 100*time.Millisecond, 3*time.Second)
	t := newTable("policy", "jobs per run", "time per run", "events/s", "jobs/s")
	var bench []BenchResult
	for _, name := range []string{placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon, placement.NameRollingHorizon} {
		r, err := Measure(ctx, fmt.Sprintf("Sim/policy=%s/slots=1000/jobs=%d", name, jobs), minTime, 1000, func(ctx context.Context) ([]Metric, error) {
			p, err := policy.NewPlacement(name, policy.PlacementConfig{Seed: env.Seed})
			if err != nil {
				return nil, err
			}
			res, err := s.Model().Run(ctx, s.Source(0), p, sim.RunOptions{Warmup: s.WarmupJobs})
			if err != nil {
				return nil, err
			}
			return []Metric{{Value: float64(res.Events), Unit: "events/s", Rate: true}, {Value: float64(res.Arrived), Unit: "jobs/s", Rate: true}}, nil
		})
		if err != nil {
			return nil, err
		}
		ev, _ := r.Metric("events/s")
		js, _ := r.Metric("jobs/s")
		t.add(name, jobs, ms(r.Seconds()), fmt.Sprintf("%.3g", ev), fmt.Sprintf("%.3g", js))
		bench = append(bench, r)
		env.Logf("%s: %.3g events/s", name, ev)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "One replication of the Fig. 9 setting at ρ = 0.6 (1000 slots, K = 100, %d jobs, seed %d), one policy per run, "+
		"on one goroutine; an event is an arrival or the end of a map phase. Means over runs of at least %s.\n\n", jobs, env.Seed, minTime)
	b.WriteString(t.String())
	return &Output{Markdown: b.String(), Bench: bench}, nil
}

// perfThresholds measures the generation of threshold tables (Theorems
// 1-2) for X ~ U[1, 100], R ~ U{1..10} and growing K, with both
// recursions.
func perfThresholds(ctx context.Context, env *Env) (*Output, error) {
	w, err := models.DecodeWorkload([]byte(`{"data": {"kind": "uniform", "min": 1, "max": 100},
		"reduces": {"kind": "uniform-int", "min": 1, "max": 10}}`), ".")
	if err != nil {
		return nil, err
	}
	sizes := Pick(env, []int{50, 150}, []int{100, 500, 1000, 2000})
	minTime := Pick(env, 100*time.Millisecond, 2*time.Second)
	t := newTable("K (jobs)", "thresholds", "table memory", "conditional (optd)", "printed recursion", "conditional / printed")
	var bench []BenchResult
	for _, k := range sizes {
		var res [2]BenchResult
		for i, rec := range []thresholds.Recursion{thresholds.ConditionalRecursion, thresholds.PaperRecursion} {
			r, err := Measure(ctx, fmt.Sprintf("Thresholds/recursion=%s/maxR=10/jobs=%d", rec, k), minTime, 1000, func(ctx context.Context) ([]Metric, error) {
				tab, err := thresholds.BuildTable(ctx, w, k, thresholds.Options{Recursion: rec})
				if err != nil {
					return nil, err
				}
				n := 0
				for _, s := range tab.Stages {
					n += len(s)
				}
				return []Metric{{Value: float64(n), Unit: "thresholds/s", Rate: true}}, nil
			})
			if err != nil {
				return nil, err
			}
			res[i] = r
			bench = append(bench, r)
		}
		count := 10 * k * (k - 1) / 2 // Σ_i (K−i)·r̄
		t.add(k, count, fmt.Sprintf("%.1f MiB", thresholds.TableBytes(k, 10)/(1<<20)), ms(res[0].Seconds()), ms(res[1].Seconds()),
			fmt.Sprintf("%.2f×", res[0].Seconds()/res[1].Seconds()))
		env.Logf("K = %d: %.3g s", k, res[0].Seconds())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "thresholds.BuildTable for X ~ U[1, 100], R ~ U{1..10} (closed-form partial expectations), up to 2 workers; "+
		"the printed (unconditional) recursion is timed beside it on the same workload. Means over runs of at least %s.\n\n", minTime)
	b.WriteString(t.String())
	return &Output{Markdown: b.String(), Bench: bench}, nil
}

// mdpSize is one placement MDP of the growth sequence.
type mdpSize struct{ slots, k, maxR, waiting int }

// mdpModel has slots of distinct costs 1 + i² (no symmetry to exploit), R
// uniform on 1..maxR with Y ∈ {2, 40} equally likely, λ = 0.4·K, μ = 1.
func mdpModel(sz mdpSize) (mdp.PlacementModel, error) {
	costs := make([]float64, sz.slots)
	for i := range costs {
		costs[i] = float64(1 + i*i)
	}
	var pts []models.JointPoint
	for r := 1; r <= sz.maxR; r++ {
		pts = append(pts,
			models.JointPoint{Data: float64(2 * r), Reduces: r, Prob: 0.5 / float64(sz.maxR)},
			models.JointPoint{Data: float64(40 * r), Reduces: r, Prob: 0.5 / float64(sz.maxR)})
	}
	w, err := models.NewJointWorkload(pts)
	if err != nil {
		return mdp.PlacementModel{}, err
	}
	return mdp.PlacementModel{SlotCosts: costs, K: sz.k, Lambda: 0.4 * float64(sz.k), Mu: 1, MaxWaiting: sz.waiting, Workload: w}, nil
}

// mdpSizes grow the placement MDP: more slots, more jobs in service.
var mdpSizes = []mdpSize{
	{6, 3, 2, 2}, {7, 3, 2, 2}, {8, 3, 2, 2}, {8, 4, 2, 2}, {9, 4, 2, 2}, {10, 4, 2, 2}, {10, 5, 2, 2},
	{11, 5, 2, 2}, {12, 5, 2, 2}, {12, 6, 2, 2}, {13, 6, 2, 2}, {14, 6, 2, 2}, {14, 7, 2, 2}, {16, 7, 2, 2}, {16, 8, 2, 2},
}

// perfMDP solves the reduce-placement MDP of the stable system exactly
// (relative value iteration, plus the exact evaluation of greedy and random)
// at growing sizes and reports the largest solved within the budget (10 s;
// 2 s in quick mode).
func perfMDP(ctx context.Context, env *Env) (*Output, error) {
	budget := Pick(env, time.Second, 10*time.Second)
	t := newTable("slots", "K", "max R", "waiting room", "states", "solve time", "optimal cost/job", "greedy", "random")
	var bench []BenchResult
	var largest *BenchResult
	var largestSize mdpSize
	stop := ""
	for _, sz := range mdpSizes {
		m, err := mdpModel(sz)
		if err != nil {
			return nil, err
		}
		sctx, cancel := context.WithTimeout(ctx, budget)
		var sol *mdp.PlacementSolution
		r, err := Measure(sctx, fmt.Sprintf("MDP/slots=%d/K=%d/maxR=%d/waiting=%d", sz.slots, sz.k, sz.maxR, sz.waiting), 0, 1, func(ctx context.Context) ([]Metric, error) {
			var err error
			sol, err = mdp.SolvePlacement(ctx, m, mdp.SolveOptions{})
			if err != nil {
				return nil, err
			}
			return []Metric{{Value: float64(sol.States), Unit: "states"}}, nil
		})
		cancel()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			stop = fmt.Sprintf("slots = %d, K = %d did not finish within %s", sz.slots, sz.k, budget)
			break
		}
		if errors.Is(err, mdp.ErrTooLarge) {
			stop = fmt.Sprintf("slots = %d, K = %d exceeds the default state limit", sz.slots, sz.k)
			break
		}
		if err != nil {
			return nil, err
		}
		t.add(sz.slots, sz.k, sz.maxR, sz.waiting, sol.States, ms(r.Seconds()), sol.Optimal,
			sol.PolicyCosts[placement.NameGreedy], sol.PolicyCosts[placement.NameRandom])
		bench = append(bench, r)
		env.Logf("slots %d K %d: %d states in %.3g s", sz.slots, sz.k, sol.States, r.Seconds())
		if r.Seconds() > budget.Seconds() {
			stop = fmt.Sprintf("slots = %d, K = %d took %s", sz.slots, sz.k, ms(r.Seconds()))
			break
		}
		largest, largestSize = &bench[len(bench)-1], sz
	}
	if stop == "" {
		stop = "the size sequence ended"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mdp.SolvePlacement (exact: discrete workload) on slots of distinct costs 1 + i² (no symmetry), R ~ U{1, 2} with "+
		"Y ∈ {2, 40}, λ = 0.4·K, μ = 1, growing slots and K until a solve exceeds %s (%s). Each solve includes the exact "+
		"evaluation of greedy and random on the same chain.\n\n", budget, stop)
	b.WriteString(t.String())
	if largest != nil {
		st, _ := largest.Metric("states")
		fmt.Fprintf(&b, "\nLargest MDP solved in under %s: **%.0f states** (slots = %d, K = %d) in %s.\n",
			budget, st, largestSize.slots, largestSize.k, ms(largest.Seconds()))
	}
	return &Output{Markdown: b.String(), Bench: bench}, nil
}

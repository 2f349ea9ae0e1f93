// Package bound is the `optd bound` command (docs/formats.md#placement-scenario), a thin adapter
// from flags to package bound (what it computes and why each bound is a
// bound is documented there):
//
//	optd bound --scenario FILE [--policies random,greedy,receding-horizon,...]
//	           [--bounds hindsight-lp,empty-cluster,mdp] [--shard i/n]
//	optd bound merge SHARD.json...
package bound

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
	_ "github.com/optd/optd/policy/rollout" // the rollout placement policy --policies may name
	"github.com/optd/optd/sim"
)

// options are the flags of `optd bound`.
type options struct {
	scenario      string
	policies      string
	bounds        string
	shard         string
	window        int
	horizon       int
	bins          int
	maxStates     int
	classes       int
	penaltySteps  int
	lagrangeSteps int
	progress      string
}

// NewCommand returns the `optd bound` command (and its `merge` subcommand)
// using package mdp for the MDP and the hindsight bound.
func NewCommand(env *cli.Env) *cobra.Command {
	return newCommand(env, bound.DefaultBackend())
}

func newCommand(env *cli.Env, be bound.Backend) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "bound --scenario FILE [--policies random,greedy,receding-horizon,...] [--shard i/n]",
		Short: "Reduce-placement policy costs with confidence intervals, lower bounds and the optimum",
		Long: `Simulates each policy on the scenario's reduce-placement queue (format:
` + "`optd schema placement-scenario`" + `; Poisson arrivals, K-limited processor sharing, reducers held from entering
service to departure) over its replications, with common random numbers, and
prints the mean cost per job with a 95% confidence interval, the lower bounds
(hindsight LP on the same traces, the hindsight LP with an information-
relaxation penalty fitted on separate training runs, empty cluster, the MDP
where solvable), the
exact optimum when the MDP is small enough, and each policy's gap to the best
bound. Policies: ` + strings.Join(bound.PolicyNames(), ", ") + `;
a parameterized family takes its parameters as NAME:k=v;k=v (the form
` + "`optd search`" + ` prints as best_policy). adp-penalty and adp-bid-price fit
their value function on the scenario's model first (seconds to a minute).`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, be, o, env.Config.Limits)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "placement scenario `FILE` (JSON; format: optd schema placement-scenario; a starter: optd example placement-scenario)")
	f.StringVar(&o.policies, "policies", strings.Join(bound.DefaultPolicies, ","), "comma-separated policies to simulate")
	f.StringVar(&o.bounds, "bounds", strings.Join(bound.DefaultBounds, ","), "comma-separated lower bounds to compute: hindsight-lp, hindsight-lagrangian, hindsight-penalized, value-penalty, empty-cluster, mdp (empty for none)")
	f.StringVar(&o.shard, "shard", "", "run only shard i of n (i/n, 0 ≤ i < n) of the replications")
	cli.AddProgressFlag(f, &o.progress)
	f.IntVar(&o.window, "window", 0, "estimator window ω of receding-horizon and rolling-horizon (0: 100)")
	f.IntVar(&o.horizon, "horizon", 0, "horizon H of rolling-horizon (0: 10)")
	f.IntVar(&o.bins, "bins", bound.DefaultBins, "bins per value of R for the MDP bracket of a continuous workload")
	f.IntVar(&o.maxStates, "max-states", bound.DefaultMaxStates, "largest MDP to solve (states)")
	f.IntVar(&o.lagrangeSteps, "lagrange-steps", 0, "subgradient steps of the hindsight-lagrangian bound (0: 300)")
	f.IntVar(&o.penaltySteps, "penalty-steps", 0, "training runs of the hindsight-penalized bound's penalty fit (0: 1500)")
	f.IntVar(&o.classes, "hindsight-classes", bound.DefaultHindsightClasses, "group the slots into at most this many cost classes (rounded down) for the hindsight LP; 0: exact costs")
	config.AddFlags(f, config.Default(), cli.LimitKeys...)
	_ = cmd.MarkFlagRequired("scenario")
	cmd.AddCommand(newMergeCommand())
	return cmd
}

// parseList splits a comma-separated flag, rejecting empty items and
// duplicates.
func parseList(flag, s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("--%s = %q: empty name", flag, s)
		}
		if slices.Contains(out, p) {
			return nil, fmt.Errorf("--%s = %q: %q listed twice", flag, s, p)
		}
		out = append(out, p)
	}
	return out, nil
}

// parseShard parses "i/n".
func run(cmd *cobra.Command, be bound.Backend, o options, limits config.Limits) error {
	policies, err := parseList("policies", o.policies)
	if err != nil {
		return err
	}
	bounds, err := parseList("bounds", o.bounds)
	if err != nil {
		return err
	}
	req := bound.Request{Settings: bound.Settings{
		Policies: policies, Bounds: bounds,
		Window: o.window, Horizon: o.horizon, Bins: o.bins, MaxStates: o.maxStates,
		HindsightClasses: o.classes, PenaltySteps: o.penaltySteps, LagrangeSteps: o.lagrangeSteps,
	}}
	if err := cli.CheckProgressMode(o.progress); err != nil {
		return err
	}
	if o.shard != "" {
		if req.ShardIndex, req.ShardCount, err = cli.ParseShard(o.shard); err != nil {
			return err
		}
	}
	if err := req.Validate(); err != nil {
		return fmt.Errorf("--%w", err)
	}
	data, err := os.ReadFile(o.scenario)
	if err != nil {
		return fmt.Errorf("--scenario: %w", err)
	}
	if err := cli.CheckInputKind("scenario", o.scenario, "placement-scenario"); err != nil {
		return err
	}
	s, err := sim.LoadScenario(o.scenario)
	if err != nil {
		return err
	}
	if err := cli.CheckPlacementWork(s, limits, slices.Contains(bounds, bound.BoundHindsight), false); err != nil {
		return fmt.Errorf("--scenario %s: %w", o.scenario, err)
	}
	sum := sha256.Sum256(data)
	req.ScenarioSHA256 = hex.EncodeToString(sum[:])

	prog := newProgress(cmd.ErrOrStderr(), o.progress)
	defer prog.finish()
	out, err := bound.Run(cmd.Context(), be, s, req, bound.Progress{Simulated: prog.simulated, MDP: prog.mdp, Penalty: prog.penalty})
	if err != nil {
		return err
	}
	prog.finish()
	return cli.WriteJSON(cmd.OutOrStdout(), out)
}

// progress is the command's progress: the MDP solver's iterations while
// it solves, then the policy-replications simulated (each phase under its
// own name, so the MDP's never stays on while it simulates).
type progress struct{ *cli.Progress }

func newProgress(w io.Writer, mode string) *progress {
	return &progress{cli.NewProgressMode(w, mode, "optd bound", "starting", 0, "")}
}

func (p *progress) simulated(done, total int) {
	p.Phase("simulating", done, total, "policy-replications")
}
func (p *progress) finish() { p.Finish() }
func (p *progress) mdp(done, total int) {
	p.Phase("solving the MDP", done, total, "iterations (estimated)")
}

func (p *progress) penalty(done, total int) {
	p.Describe(fmt.Sprintf("fitting the penalty %d/%d", done, total))
}

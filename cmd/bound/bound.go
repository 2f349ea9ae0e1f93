// Package bound implements `optd bound` (CONTRACTS §4): for a reduce-placement
// scenario (the stable system of Tan et al., INFOCOM 2013, §III-B, simulated
// by package sim), each requested policy's mean cost per job with a 95%
// confidence interval over replications, every applicable lower bound, the
// exact optimum where the MDP is small enough to solve, and each policy's gap
// to the best bound.
//
//	optd bound --scenario FILE [--policies random,greedy,receding-horizon,...]
//	           [--bounds hindsight-lp,empty-cluster,mdp] [--shard i/n]
//	optd bound merge SHARD.json...
//
// Lower bounds:
//
//   - "hindsight-lp": per replication, the LP relaxation of the offline
//     assignment that knows the whole sampled trace (mdp.HindsightBound),
//     divided by the number of counted jobs, averaged over replications.
//     Every policy is simulated on the same traces (common random numbers),
//     so this bounds each policy's realized cost, trace by trace.
//   - "empty-cluster": every job alone in an empty cluster,
//     E[Y·Σ_{k≤R} H_(k)] (mdp.EmptyClusterBound; for a trace scenario the
//     mean over the simulated jobs).
//   - "mdp-optimal" (= "optimal") for explicit slot costs, a finite
//     max_waiting and a discrete workload whose MDP has at most --max-states
//     states; for a continuous workload "mdp-lower" (and "mdp-upper" under
//     "upper_bounds") bracket the optimum with --bins bins.
//
// Policies are the names of policy.PlacementNames() plus "mdp-optimal" (the
// MDP's decision table, when solved).
//
// Sharding: --shard i/n runs replications [⌊i·N/n⌋, ⌊(i+1)·N/n⌋) of the N
// in the scenario and prints the same shape with the raw per-replication
// figures, the settings and the replication-independent part under
// "shard"; `optd bound merge` checks that the shards agree and cover every
// replication once, and prints exactly what the unsharded run prints.
package bound

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// Defaults of the flags.
const (
	DefaultPolicies  = "random,greedy,receding-horizon"
	DefaultBounds    = "hindsight-lp,empty-cluster,mdp"
	DefaultMaxStates = 200000
	DefaultBins      = 8
	// DefaultHindsightClasses: the hindsight LP uses the exact slot costs
	// (one class per distinct cost) unless --hindsight-classes says
	// otherwise. On the Fig. 9 setting (1000 distinct costs, 50,000 jobs)
	// the exact LP takes about a minute per replication and gives 88.5
	// where 100 rounded-down classes give 73.2.
	DefaultHindsightClasses = 0
	// PolicyMDPOptimal is the MDP's optimal decision table.
	PolicyMDPOptimal = "mdp-optimal"
)

// options are the flags of `optd bound`.
type options struct {
	scenario  string
	policies  string
	bounds    string
	shard     string
	window    int
	horizon   int
	bins      int
	maxStates int
	classes   int
}

// NewCommand returns the `optd bound` command (and its `merge` subcommand)
// using package mdp for the MDP and the hindsight bound.
func NewCommand(env *cli.Env) *cobra.Command {
	return newCommand(env, defaultBackend())
}

func newCommand(_ *cli.Env, be Backend) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "bound --scenario FILE [--policies random,greedy,receding-horizon,...] [--shard i/n]",
		Short: "Reduce-placement policy costs with confidence intervals, lower bounds and the optimum",
		Long: `Simulates each policy on the scenario's reduce-placement queue (CONTRACTS §4:
Poisson arrivals, K-limited processor sharing, reducers held from entering
service to departure) over its replications, with common random numbers, and
prints the mean cost per job with a 95% confidence interval, the lower bounds
(hindsight LP on the same traces, empty cluster, the MDP where solvable), the
exact optimum when the MDP is small enough, and each policy's gap to the best
bound. Policies: ` + strings.Join(policy.PlacementNames(), ", ") + `, ` + PolicyMDPOptimal + `;
a parameterized family takes its parameters as NAME:k=v;k=v (the form
` + "`optd search`" + ` prints as best_policy).`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, be, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario file (CONTRACTS §4 JSON)")
	f.StringVar(&o.policies, "policies", DefaultPolicies, "comma-separated policies to simulate")
	f.StringVar(&o.bounds, "bounds", DefaultBounds, "comma-separated lower bounds to compute: hindsight-lp, empty-cluster, mdp (empty for none)")
	f.StringVar(&o.shard, "shard", "", "run only shard i of n (i/n, 0 ≤ i < n) of the replications")
	f.IntVar(&o.window, "window", 0, "estimator window ω of receding-horizon and rolling-horizon (0: 100)")
	f.IntVar(&o.horizon, "horizon", 0, "horizon H of rolling-horizon (0: 10)")
	f.IntVar(&o.bins, "bins", DefaultBins, "bins per value of R for the MDP bracket of a continuous workload")
	f.IntVar(&o.maxStates, "max-states", DefaultMaxStates, "largest MDP to solve (states)")
	f.IntVar(&o.classes, "hindsight-classes", DefaultHindsightClasses, "group the slots into at most this many cost classes (rounded down) for the hindsight LP; 0: exact costs")
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
func parseShard(s string) (i, n int, err error) {
	a, b, ok := strings.Cut(s, "/")
	if ok {
		i, err = strconv.Atoi(strings.TrimSpace(a))
		if err == nil {
			n, err = strconv.Atoi(strings.TrimSpace(b))
		}
	}
	if !ok || err != nil || n < 1 || i < 0 || i >= n {
		return 0, 0, fmt.Errorf("--shard = %q: want i/n with 0 ≤ i < n", s)
	}
	return i, n, nil
}

// shardRange returns the replications of shard i of n.
func shardRange(reps, i, n int) (lo, hi int) {
	return i * reps / n, (i + 1) * reps / n
}

func run(cmd *cobra.Command, be Backend, o options) error {
	ctx := cmd.Context()
	policies, err := parseList("policies", o.policies)
	if err != nil {
		return err
	}
	if len(policies) == 0 {
		return fmt.Errorf("--policies: give at least one policy")
	}
	known := append(policy.PlacementNames(), PolicyMDPOptimal)
	for _, p := range policies {
		name, _, err := policy.ParsePlacementSpec(p)
		if err != nil {
			return fmt.Errorf("--policies: %w", err)
		}
		if !slices.Contains(known, name) {
			return fmt.Errorf("--policies: unknown policy %q (known: %s)", name, strings.Join(known, ", "))
		}
		if name != PolicyMDPOptimal {
			if _, err := factory(p, o, nil)(0); err != nil {
				return fmt.Errorf("--policies %s: %w", p, err)
			}
		}
	}
	bounds, err := parseList("bounds", o.bounds)
	if err != nil {
		return err
	}
	for _, b := range bounds {
		if !slices.Contains([]string{BoundHindsight, BoundEmptyCluster, boundsMDP}, b) {
			return fmt.Errorf("--bounds: unknown bound %q (known: %s, %s, %s)", b, BoundHindsight, BoundEmptyCluster, boundsMDP)
		}
	}
	if o.bins < 1 {
		return fmt.Errorf("--bins = %d: must be ≥ 1", o.bins)
	}
	if o.maxStates < 1 {
		return fmt.Errorf("--max-states = %d: must be ≥ 1", o.maxStates)
	}
	if o.window < 0 || o.horizon < 0 || o.classes < 0 {
		return fmt.Errorf("--window = %d, --horizon = %d, --hindsight-classes = %d: must be ≥ 0", o.window, o.horizon, o.classes)
	}
	data, err := os.ReadFile(o.scenario)
	if err != nil {
		return fmt.Errorf("--scenario: %w", err)
	}
	s, err := sim.LoadScenario(o.scenario)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	settings := Settings{
		ScenarioSHA256: hex.EncodeToString(sum[:]),
		Replications:   s.Replications,
		Policies:       policies, Bounds: bounds,
		Window: o.window, Horizon: o.horizon, Bins: o.bins, MaxStates: o.maxStates,
		HindsightClasses: o.classes,
	}
	shardIdx, shardN := 0, 1
	if o.shard != "" {
		if shardIdx, shardN, err = parseShard(o.shard); err != nil {
			return err
		}
	}
	lo, hi := shardRange(s.Replications, shardIdx, shardN)

	prog := newProgress(cmd.ErrOrStderr(), (hi-lo)*len(policies))
	defer prog.finish()

	fixed, mdpPolicy, err := computeFixed(ctx, be, s, settings, prog)
	if err != nil {
		return err
	}
	if slices.Contains(policies, PolicyMDPOptimal) && mdpPolicy == nil {
		why := "--bounds does not include mdp"
		if fixed.MDP != nil {
			why = fixed.MDP.Skipped
		}
		return fmt.Errorf("--policies: %s needs the MDP of the scenario solved: %s", PolicyMDPOptimal, why)
	}
	factories := make([]sim.NamedFactory, len(policies))
	for k, name := range policies {
		factories[k] = sim.NamedFactory{Name: name, New: factory(name, o, mdpPolicy)}
	}
	reps := make([]RepFigures, 0, hi-lo)
	for rep := lo; rep < hi; rep++ {
		r, err := runReplication(ctx, be, s, rep, factories, bounds, o.classes)
		if err != nil {
			return err
		}
		reps = append(reps, r)
		prog.add(len(policies))
	}
	if hi == lo {
		return fmt.Errorf("--shard %s: no replication in this shard (the scenario has %d)", o.shard, s.Replications)
	}
	out, err := aggregate(policies, fixed, reps)
	if err != nil {
		return err
	}
	if o.shard != "" {
		out.Shard = &Shard{Index: shardIdx, Count: shardN, Settings: settings, Fixed: fixed, Reps: reps}
	}
	prog.finish()
	return cli.WriteJSON(cmd.OutOrStdout(), out)
}

// factory returns the policy factory of name: the registry's with the
// command's configuration (name may carry a parameterized family's
// parameters, "state-threshold:base=2;per-job=1.5", as `optd search`
// prints its best policy), or the solved MDP's table.
func factory(name string, o options, mdpPolicy policy.Placement) sim.PolicyFactory {
	if name == PolicyMDPOptimal {
		return func(uint64) (policy.Placement, error) { return mdpPolicy, nil }
	}
	return func(seed uint64) (policy.Placement, error) {
		base, params, err := policy.ParsePlacementSpec(name)
		if err != nil {
			return nil, err
		}
		return policy.NewPlacement(base, policy.PlacementConfig{Seed: seed, Window: o.window, Horizon: o.horizon, Params: params})
	}
}

// computeFixed computes the replication-independent bounds: the MDP and the
// exact empty-cluster bound.
func computeFixed(ctx context.Context, be Backend, s *sim.Scenario, st Settings, prog *progress) (Fixed, policy.Placement, error) {
	f := Fixed{LowerBounds: map[string]float64{}}
	if be == nil {
		if slices.Contains(st.Bounds, boundsMDP) {
			f.MDP = &MDPInfo{Skipped: "this build has no MDP solver"}
		}
		return f, nil, nil
	}
	if slices.Contains(st.Bounds, BoundEmptyCluster) && !pathwiseEmptyCluster(be, s) {
		f.LowerBounds[BoundEmptyCluster] = be.EmptyClusterBound(s.Workload, s.SlotCosts)
	}
	if !slices.Contains(st.Bounds, boundsMDP) {
		return f, nil, nil
	}
	info := &MDPInfo{}
	f.MDP = info
	switch {
	case s.Trace != nil:
		info.Skipped = "a trace scenario has no MDP"
	case !s.SlotsExplicit:
		info.Skipped = "slots are drawn from a law; the MDP needs slots.costs"
	case s.MaxWaiting < 0:
		info.Skipped = "max_waiting is unlimited; the MDP needs a finite waiting room"
	}
	if info.Skipped != "" {
		return f, nil, nil
	}
	sol, tooLarge, err := be.SolvePlacement(ctx, s, st.Bins, st.MaxStates, prog.mdp)
	if err != nil {
		return f, nil, fmt.Errorf("MDP: %w", err)
	}
	if tooLarge {
		info.Skipped = fmt.Sprintf("the MDP has more than --max-states = %d states", st.MaxStates)
		return f, nil, nil
	}
	info.Solved, info.Exact, info.States, info.PolicyCosts = true, sol.Exact, sol.States, sol.PolicyCosts
	if sol.Exact {
		opt := sol.Optimal
		f.Optimal = &opt
		f.LowerBounds[BoundMDPOptimal] = opt
	} else {
		f.LowerBounds[BoundMDPLower] = sol.Lower
		f.UpperBounds = map[string]float64{BoundMDPUpper: sol.Upper}
	}
	return f, sol.Policy, nil
}

// pathwiseEmptyCluster reports that the empty-cluster bound is the mean
// over the simulated jobs (a trace, or no mdp backend) rather than the
// exact expectation over the workload.
func pathwiseEmptyCluster(be Backend, s *sim.Scenario) bool {
	return be == nil || s.Trace != nil
}

// runReplication simulates one replication under every policy and computes
// its pathwise bounds.
func runReplication(ctx context.Context, be Backend, s *sim.Scenario, rep int, factories []sim.NamedFactory, bounds []string, classes int) (RepFigures, error) {
	hindsight := be != nil && slices.Contains(bounds, BoundHindsight)
	r, err := s.RunReplication(ctx, rep, factories, hindsight)
	if err != nil {
		return RepFigures{}, err
	}
	first := r.Results[factories[0].Name]
	out := RepFigures{
		Replication: rep,
		JobsCounted: first.Counted,
		MeanCost:    make(map[string]float64, len(factories)),
		LowerBounds: map[string]float64{},
	}
	for _, nf := range factories {
		res := r.Results[nf.Name]
		out.MeanCost[nf.Name] = res.MeanCost
		out.Events += res.Events
	}
	if slices.Contains(bounds, BoundEmptyCluster) && pathwiseEmptyCluster(be, s) {
		out.LowerBounds[BoundEmptyCluster] = first.EmptyClusterMean
	}
	if hindsight && first.Counted > 0 {
		jobs := make([]sim.JobRecord, 0, first.Counted)
		for _, j := range r.Records {
			if j.Counted {
				jobs = append(jobs, j)
			}
		}
		total, err := be.HindsightBound(ctx, jobs, s.SlotCosts, classes)
		if err != nil {
			return RepFigures{}, fmt.Errorf("replication %d: hindsight bound: %w", rep, err)
		}
		out.LowerBounds[BoundHindsight] = total / float64(first.Counted)
	}
	return out, nil
}

// progress is the command's bar; mdp reports the MDP solver's progress in
// its description.
type progress struct{ *cli.Progress }

func newProgress(w io.Writer, total int) *progress {
	return &progress{cli.NewProgress(w, total, "simulating")}
}

func (p *progress) add(n int) { p.Add(n) }
func (p *progress) finish()   { p.Finish() }
func (p *progress) mdp(done, total int) {
	p.Describe(fmt.Sprintf("solving the MDP %d/%d", done, total))
}

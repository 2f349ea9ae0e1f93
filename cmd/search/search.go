// Package search implements `optd search`: tune a placement family's
// parameters on a scenario by simulation with common random numbers
// (package search: gonum's CMA-ES or Nelder-Mead), then compare the best
// parameters with the defaults and with reference policies on fresh
// replications, with the best lower bound beside them.
//
//	optd search --scenario FILE --policy FAMILY [--params name=lo:hi,name=v,...]
//	            [--method cmaes|nelder-mead] [--evaluations 200] [--time 10m]
//	            [--replications N] [--validation N] [--references receding-horizon,greedy]
//	            [--exact] [--shard i/n]
//	optd search merge SHARD.json...
//
// Sharding: an optimizer such as CMA-ES is sequential (each generation
// depends on the last), so the replications of one search cannot be split
// without a coordinator. --shard i/n instead runs restart i of n: shard 0
// starts at the defaults, shard i > 0 at a point drawn uniformly in the
// parameter box from (--seed, i), each with its own optimizer seed, all on
// the same replications. `optd search merge` keeps the restart with the
// smallest search objective (comparable across shards: the same seeds) and
// lists every restart; merging the single shard of --shard 0/1 gives the
// unsharded output.
package search

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/mdp"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/search"
	"github.com/optd/optd/sim"
)

// Defaults of the flags.
const (
	DefaultReferences = "receding-horizon,greedy"
	DefaultMaxStates  = 200000
)

type options struct {
	scenario     string
	family       string
	params       string
	method       string
	evaluations  int
	timeBudget   time.Duration
	replications int
	validation   int
	seed         uint64
	references   string
	bounds       bool
	classes      int
	window       int
	horizon      int
	exact        bool
	maxStates    int
	shard        string
}

// NewCommand returns `optd search` and its `merge` subcommand.
func NewCommand(_ *cli.Env) *cobra.Command {
	var o options
	families := []string{}
	for _, n := range policy.PlacementNames() {
		if len(policy.PlacementParams(n)) > 0 {
			families = append(families, n)
		}
	}
	cmd := &cobra.Command{
		Use:   "search --scenario FILE --policy FAMILY [--params name=lo:hi,...]",
		Short: "Tune a placement policy's parameters by simulation with common random numbers",
		Long: `Searches the parameters of a placement policy family for the lowest mean cost
per job on the scenario (CONTRACTS §4), every candidate simulated on the same
replications (common random numbers), with gonum's CMA-ES or Nelder-Mead.
Prints the best parameters, their cost with a 95% confidence interval, the
default parameters' cost on the same seeds and the paired difference, then a
validation on fresh seeds: the best against the defaults and the reference
policies (paired differences) and the best lower bound (hindsight LP,
empty cluster) with the remaining gap. With --exact the cost is the MDP's
exact evaluation (small scenarios) and the output adds the optimum and the
share of the greedy → optimum gap the tuned policy closes.

Families: ` + strings.Join(families, ", ") + `.
--params restricts the search: name=lo:hi searches [lo, hi], name=v fixes
the parameter; others keep their declared ranges.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario file (CONTRACTS §4 JSON)")
	f.StringVar(&o.family, "policy", "", "placement family to tune ("+strings.Join(families, ", ")+")")
	f.StringVar(&o.params, "params", "", "name=lo:hi or name=value, comma-separated: restrict or fix parameters")
	f.StringVar(&o.method, "method", search.MethodCMAES, "optimizer: cmaes or nelder-mead")
	f.IntVar(&o.evaluations, "evaluations", search.DefaultEvaluations, "budget of objective evaluations")
	f.DurationVar(&o.timeBudget, "time", 0, "wall-clock budget of the search phase (0: none)")
	f.IntVar(&o.replications, "replications", 0, "replications per evaluation (0: the scenario's replications)")
	f.IntVar(&o.validation, "validation", 0, "fresh replications for the validation (0: as many as --replications; -1: none)")
	f.Uint64Var(&o.seed, "seed", 1, "optimizer seed (the simulations depend on the scenario's seed only)")
	f.StringVar(&o.references, "references", DefaultReferences, "comma-separated reference policies for the validation (NAME or NAME:k=v;k=v)")
	f.BoolVar(&o.bounds, "bounds", true, "compute the hindsight-LP and empty-cluster lower bounds in the validation")
	f.IntVar(&o.classes, "hindsight-classes", 0, "group the slots into at most this many cost classes for the hindsight LP (0: exact costs)")
	f.IntVar(&o.window, "window", 0, "estimator window ω of the policies that have one and do not search it (0: their default)")
	f.IntVar(&o.horizon, "horizon", 0, "horizon H of rolling-horizon when not searched (0: 10)")
	f.BoolVar(&o.exact, "exact", false, "evaluate candidates exactly on the scenario's MDP instead of simulating")
	f.IntVar(&o.maxStates, "max-states", DefaultMaxStates, "largest MDP for --exact (states)")
	f.StringVar(&o.shard, "shard", "", "run restart i of n (i/n, 0 ≤ i < n); combine with `optd search merge`")
	_ = cmd.MarkFlagRequired("scenario")
	_ = cmd.MarkFlagRequired("policy")
	cmd.AddCommand(newMergeCommand())
	return cmd
}

// Settings are what must agree between the shards of one search.
type Settings struct {
	ScenarioSHA256 string   `json:"scenario_sha256"`
	Policy         string   `json:"policy"`
	Params         string   `json:"params"`
	Method         string   `json:"method"`
	Evaluations    int      `json:"evaluations"`
	TimeBudgetMS   int64    `json:"time_budget_ms"`
	Replications   int      `json:"replications"`
	Validation     int      `json:"validation"`
	Seed           uint64   `json:"seed"`
	References     []string `json:"references"`
	Bounds         bool     `json:"bounds"`
	Classes        int      `json:"hindsight_classes"`
	Window         int      `json:"window"`
	Horizon        int      `json:"horizon"`
	Exact          bool     `json:"exact"`
	MaxStates      int      `json:"max_states"`
}

// ParamDecl is a searched parameter as printed.
type ParamDecl struct {
	Name    string  `json:"name"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Default float64 `json:"default"`
	Scale   string  `json:"scale"`
	Integer bool    `json:"integer"`
}

// Exact holds the MDP figures of --exact.
type Exact struct {
	States  int     `json:"states"`
	Optimal float64 `json:"optimal"`
	Greedy  float64 `json:"greedy"`
	Default float64 `json:"default"`
	Best    float64 `json:"best"`
	// GapClosed is (greedy − best)/(greedy − optimal): the share of the
	// greedy → optimum gap the tuned policy closes (null when greedy is
	// optimal).
	GapClosed        *float64 `json:"gap_closed"`
	DefaultGapClosed *float64 `json:"default_gap_closed"`
}

// Restart summarizes one shard of a sharded search.
type Restart struct {
	Shard     int                `json:"shard"`
	Start     map[string]float64 `json:"start_params"`
	Best      map[string]float64 `json:"best_params"`
	Objective float64            `json:"objective"`
	Simulated int                `json:"candidates_simulated"`
	SearchMS  float64            `json:"search_ms"`
}

// Shard identifies a shard's output.
type Shard struct {
	Index    int      `json:"index"`
	Count    int      `json:"count"`
	Settings Settings `json:"settings"`
}

// Output is what `optd search` prints.
type Output struct {
	Scenario string      `json:"scenario"`
	Policy   string      `json:"policy"`
	Space    []ParamDecl `json:"space"`
	// BestPolicy is the tuned policy in the form `optd bound --policies`
	// and --references accept.
	BestPolicy string         `json:"best_policy"`
	Result     *search.Result `json:"result"`
	Exact      *Exact         `json:"exact,omitempty"`
	Restarts   []Restart      `json:"restarts,omitempty"`
	Shard      *Shard         `json:"shard,omitempty"`
}

func parseReferences(s string) ([]string, error) {
	var out []string
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			return nil, fmt.Errorf("--references = %q: empty item", s)
		}
		if slices.Contains(out, r) {
			return nil, fmt.Errorf("--references = %q: %q listed twice", s, r)
		}
		out = append(out, r)
	}
	return out, nil
}

func run(cmd *cobra.Command, o options) error {
	ctx := cmd.Context()
	sp, err := search.SpaceOf(o.family)
	if err != nil {
		return fmt.Errorf("--policy: %w", err)
	}
	if sp, err = sp.Restrict(o.params); err != nil {
		return err
	}
	refs, err := parseReferences(o.references)
	if err != nil {
		return err
	}
	switch {
	case o.evaluations < 1:
		return fmt.Errorf("--evaluations = %d: must be ≥ 1", o.evaluations)
	case o.replications < 0:
		return fmt.Errorf("--replications = %d: must be ≥ 0", o.replications)
	case o.validation < -1:
		return fmt.Errorf("--validation = %d: must be ≥ -1", o.validation)
	case o.timeBudget < 0:
		return fmt.Errorf("--time = %v: must be ≥ 0", o.timeBudget)
	case o.window < 0 || o.horizon < 0 || o.classes < 0 || o.maxStates < 1:
		return fmt.Errorf("--window, --horizon, --hindsight-classes must be ≥ 0 and --max-states ≥ 1")
	case o.method != search.MethodCMAES && o.method != search.MethodNelderMead:
		return fmt.Errorf("--method = %q: want %s or %s", o.method, search.MethodCMAES, search.MethodNelderMead)
	}
	data, err := os.ReadFile(o.scenario)
	if err != nil {
		return fmt.Errorf("--scenario: %w", err)
	}
	s, err := sim.LoadScenario(o.scenario)
	if err != nil {
		return err
	}
	shardIdx, shardN := 0, 1
	if o.shard != "" {
		if shardIdx, shardN, err = cli.ParseShard(o.shard); err != nil {
			return err
		}
	}
	reps := o.replications
	if reps == 0 {
		reps = s.Replications
	}
	sum := sha256.Sum256(data)
	st := Settings{
		ScenarioSHA256: hex.EncodeToString(sum[:]), Policy: o.family, Params: o.params, Method: o.method,
		Evaluations: o.evaluations, TimeBudgetMS: o.timeBudget.Milliseconds(), Replications: reps, Validation: o.validation,
		Seed: o.seed, References: refs, Bounds: o.bounds, Classes: o.classes, Window: o.window, Horizon: o.horizon,
		Exact: o.exact, MaxStates: o.maxStates,
	}
	base := policy.PlacementConfig{Window: o.window, Horizon: o.horizon}
	opts := search.Options{
		Method: o.method, Evaluations: o.evaluations, Time: o.timeBudget,
		Replications: reps, Validation: o.validation, Seed: o.seed,
	}
	if shardIdx > 0 {
		opts.Seed, opts.Start = restart(sp, o.seed, shardIdx)
	}
	prog := cli.NewProgress(cmd.ErrOrStderr(), opts.Evaluations*reps, "searching")
	defer prog.Finish()
	opts.Progress = prog.Set

	var prob search.Problem
	var ex *Exact
	var model mdp.PlacementModel
	if o.exact {
		model, err = exactModel(s)
		if err != nil {
			return err
		}
		prog.Describe("solving the MDP")
		sol, err := mdp.SolvePlacement(ctx, model, mdp.SolveOptions{MaxStates: o.maxStates})
		if err != nil {
			return fmt.Errorf("--exact: %w", err)
		}
		if !sol.Exact {
			return fmt.Errorf("--exact: the workload is continuous; the MDP only brackets the optimum (give a discrete workload)")
		}
		ex = &Exact{States: sol.States, Optimal: sol.Optimal, Greedy: sol.PolicyCosts["greedy"]}
		prob = &search.ExactPlacementProblem{Model: model, Family: o.family, Params: sp, Config: base, Solve: mdp.SolveOptions{MaxStates: o.maxStates}}
		opts.Replications, opts.Validation = 1, -1
		st.Replications, st.Validation = 1, -1
		prog.Describe("searching")
	} else {
		pp := &search.PlacementProblem{Scenario: s, Family: o.family, Params: sp, Config: base, Refs: refs, Bounds: o.bounds, HindsightClasses: o.classes}
		if err := pp.Check(); err != nil {
			return err
		}
		prob = pp
	}
	res, err := search.Run(ctx, prob, opts)
	if err != nil {
		return err
	}
	prog.Finish()
	out := &Output{
		Scenario: o.scenario, Policy: o.family, Space: decls(sp),
		BestPolicy: policy.FormatPlacementSpec(o.family, res.Params), Result: res,
	}
	if ex != nil {
		ex.Default, ex.Best = res.Search.Default.Mean, res.Search.Best.Mean
		ex.GapClosed, ex.DefaultGapClosed = closed(ex.Greedy, ex.Best, ex.Optimal), closed(ex.Greedy, ex.Default, ex.Optimal)
		out.Exact = ex
	}
	out.Restarts = []Restart{restartOf(shardIdx, res)}
	if o.shard != "" {
		out.Shard = &Shard{Index: shardIdx, Count: shardN, Settings: st}
	}
	return cli.WriteJSON(cmd.OutOrStdout(), out)
}

// restart returns the optimizer seed and starting point of restart i > 0:
// a point drawn uniformly in the unit cube of the space from (seed, i).
func restart(sp search.Space, seed uint64, i int) (uint64, []float64) {
	rng := rand.New(rand.NewPCG(seed, uint64(i)))
	u := make([]float64, len(sp))
	for k := range u {
		u[k] = rng.Float64()
	}
	return sim.ReplicationSeed(seed, i), sp.ToParams(u)
}

func restartOf(i int, r *search.Result) Restart {
	return Restart{Shard: i, Start: r.Start, Best: r.Params, Objective: r.Search.Best.Mean, Simulated: r.Simulated, SearchMS: r.SearchMS}
}

func closed(greedy, x, opt float64) *float64 {
	if greedy-opt <= 1e-12*max(greedy, 1) {
		return nil
	}
	v := (greedy - x) / (greedy - opt)
	return &v
}

func decls(sp search.Space) []ParamDecl {
	out := make([]ParamDecl, len(sp))
	for k, p := range sp {
		scale := "linear"
		if p.Log {
			scale = "log"
		}
		out[k] = ParamDecl{Name: p.Name, Min: p.Min, Max: p.Max, Default: p.Default, Scale: scale, Integer: p.Integer}
	}
	return out
}

// exactModel is the scenario's MDP, with the conditions `optd bound` states.
func exactModel(s *sim.Scenario) (mdp.PlacementModel, error) {
	switch {
	case s.Trace != nil:
		return mdp.PlacementModel{}, fmt.Errorf("--exact: a trace scenario has no MDP")
	case !s.SlotsExplicit:
		return mdp.PlacementModel{}, fmt.Errorf("--exact: slots are drawn from a law; the MDP needs slots.costs")
	case s.MaxWaiting < 0:
		return mdp.PlacementModel{}, fmt.Errorf("--exact: max_waiting is unlimited; the MDP needs a finite waiting room")
	}
	return mdp.PlacementModel{
		SlotCosts: s.SlotCosts, K: s.K, Lambda: s.ArrivalRate, Mu: s.ServiceRate,
		MaxWaiting: s.MaxWaiting, Workload: s.Workload,
	}, nil
}

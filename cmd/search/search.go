// Package search implements `optd search`: tune a policy's parameters on a
// scenario by simulation with common random numbers (package search:
// gonum's CMA-ES or Nelder-Mead), then compare the best parameters with the
// defaults and with reference policies on fresh replications, with the best
// lower bound beside them where one exists.
//
//	optd search --scenario NAME|FILE --policy FAMILY|SPEC [--params name=lo:hi,name=v,...]
//	            [--objective OBJ] [--method cmaes|nelder-mead] [--evaluations 200] [--time 10m]
//	            [--replications N] [--validation N] [--references REF,...]
//	            [--exact] [--shard i/n]
//	optd search merge SHARD.json...
//
// Two kinds of scenario (resolveScenario): a placement scenario
// (docs/formats.md#placement-scenario) tunes a placement family (state-threshold, …) for the mean
// fetch cost per job, with the hindsight-LP and empty-cluster bounds; a
// cluster scenario (a built-in name of `optd simulate` or a
// file) tunes a heartbeat pipeline SPEC (haste-a, pi-dhsa+sepb, …: HaSTE-A's
// β and the stages' tunable parameters, search.PipelineParams) for the
// makespan or the mean response time, with no lower bound. Both share the
// flags, the output and the sharding.
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
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
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

// ObjectiveMeanCost is the objective on a placement scenario: the mean
// fetch cost per job (the cluster objectives are search.ClusterObjectives).
const ObjectiveMeanCost = "mean-cost"

// placementFlags apply to placement scenarios only.
// DefaultHindsightClasses is --hindsight-classes: the validation solves a
// hindsight LP per replication (as many as --replications by default), and
// the exact LP of the Fig. 9 setting takes a minute or more each; 100
// classes rounded down take seconds and still give a valid, if weaker,
// bound (see bound.DefaultHindsightClasses).
const DefaultHindsightClasses = 100

var placementFlags = []string{"bounds", "hindsight-classes", "window", "horizon", "exact", "max-states"}

type options struct {
	scenario     string
	family       string
	params       string
	objective    string
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
	progress     string
}

// NewCommand returns `optd search` and its `merge` subcommand.
func NewCommand(env *cli.Env) *cobra.Command {
	var o options
	families := search.Families()
	cmd := &cobra.Command{
		Use:   "search --scenario NAME|FILE --policy FAMILY|SPEC [--params name=lo:hi,...]",
		Short: "Tune a placement or heartbeat policy's parameters by simulation with common random numbers",
		Long: `Searches the parameters of a policy for the lowest mean objective on the
scenario, every candidate simulated on the same replications (common random
numbers), with gonum's CMA-ES or Nelder-Mead. Prints the best parameters,
their objective with a 95% confidence interval, the default parameters'
objective on the same seeds and the paired difference, then a validation on
fresh seeds: the best against the defaults and the reference policies
(paired differences) and the best lower bound where one exists, with the
remaining gap.

A placement scenario (a file with "slots", "max_jobs_in_service", …; format:
` + "`optd schema placement-scenario`" + `)
tunes a placement family for the mean cost per job; the bounds are the
hindsight LP and the empty cluster. With --exact the cost is the MDP's exact
evaluation (small scenarios) and the output adds the optimum and the share of
the greedy → optimum gap the tuned policy closes.
Families: ` + strings.Join(families, ", ") + `.

A cluster scenario (a built-in name: ` + strings.Join(sim.BuiltinClusterNames(), ", ") + `;
or a file with "cluster"; format: ` + "`optd schema cluster-scenario`" + `) tunes a heartbeat pipeline SPEC as in
optd simulate (e.g. haste-a, pi-dhsa+sepb) for --objective ` + strings.Join(search.ClusterObjectives(), " or ") + `:
HaSTE-A's β (haste-a.beta_*) and every tunable stage's STAGE.PARAM.
Replication r is the run of optd simulate --seed r+1; --references are
pipeline specs (none by default); there is no lower bound.

--params restricts the search: name=lo:hi searches [lo, hi], name=v fixes
the parameter; others keep their declared ranges.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, o, env.Config.Limits) },
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "`NAME|FILE`: a built-in cluster scenario's name, or a placement or cluster scenario file (formats: optd schema placement-scenario, optd schema cluster-scenario)")
	f.StringVar(&o.family, "policy", "", "placement family ("+strings.Join(families, ", ")+") or, on a cluster scenario, pipeline spec")
	f.StringVar(&o.params, "params", "", "name=lo:hi or name=value, comma-separated: restrict or fix parameters")
	f.StringVar(&o.objective, "objective", "", "what to minimize: "+ObjectiveMeanCost+" (placement); "+strings.Join(search.ClusterObjectives(), " (default) or ")+" (cluster)")
	f.StringVar(&o.method, "method", search.MethodCMAES, "optimizer: cmaes or nelder-mead")
	f.IntVar(&o.evaluations, "evaluations", search.DefaultEvaluations, "budget of objective evaluations")
	f.DurationVar(&o.timeBudget, "time", 0, "wall-clock budget of the search phase (0: none)")
	f.IntVar(&o.replications, "replications", 0, fmt.Sprintf("replications per evaluation (0: the placement scenario's replications; %d on a cluster scenario)", search.DefaultReplications))
	f.IntVar(&o.validation, "validation", 0, "fresh replications for the validation (0: as many as --replications; -1: none)")
	f.Uint64Var(&o.seed, "seed", 1, "optimizer seed (the simulations depend on the scenario's seed on a placement scenario, on the replication number on a cluster scenario)")
	f.StringVar(&o.references, "references", DefaultReferences, "comma-separated reference policies for the validation (NAME or NAME:k=v;k=v; pipeline specs on a cluster scenario, none by default)")
	f.BoolVar(&o.bounds, "bounds", true, "compute the hindsight-LP and empty-cluster lower bounds in the validation")
	f.IntVar(&o.classes, "hindsight-classes", DefaultHindsightClasses, "group the slots into at most this many cost classes (rounded down) for the validation's hindsight LP; 0: exact costs (about a minute per replication on Fig. 9's 50,000 jobs, and every validation replication solves one)")
	f.IntVar(&o.window, "window", 0, "estimator window ω of the policies that have one and do not search it (0: their default)")
	f.IntVar(&o.horizon, "horizon", 0, "horizon H of rolling-horizon when not searched (0: 10)")
	f.BoolVar(&o.exact, "exact", false, "evaluate candidates exactly on the scenario's MDP instead of simulating")
	f.IntVar(&o.maxStates, "max-states", DefaultMaxStates, "largest MDP for --exact (states)")
	f.StringVar(&o.shard, "shard", "", "run restart i of n (`i/n`, 0 ≤ i < n); combine the shards' outputs with optd search merge")
	cli.AddProgressFlag(f, &o.progress)
	config.AddFlags(f, config.Default(), cli.LimitKeys...)
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
	Objective      string   `json:"objective"`
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
	Scenario string `json:"scenario"`
	// Kind is KindPlacement or KindCluster.
	Kind string `json:"kind"`
	// Policy is the placement family or the pipeline spec, Objective what
	// the result's figures measure (ObjectiveMeanCost, or one of
	// search.ClusterObjectives).
	Policy    string      `json:"policy"`
	Objective string      `json:"objective"`
	Space     []ParamDecl `json:"space"`
	// BestPolicy is the tuned policy as NAME:k=v;k=v, on a placement
	// scenario the form `optd bound --policies` and --references accept.
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

// target is what one search tunes: the problem (its Space is the searched
// space), what its metric measures and the kind's defaults.
type target struct {
	kind      string
	prob      search.Problem
	objective string
	// replications when --replications is 0.
	replications int
	refs         []string
	// exact holds the MDP figures of --exact (one exact evaluation per
	// candidate, no validation).
	exact *Exact
}

func run(cmd *cobra.Command, o options, limits config.Limits) error {
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
	shardIdx, shardN := 0, 1
	if o.shard != "" {
		if shardIdx, shardN, err = cli.ParseShard(o.shard); err != nil {
			return err
		}
	}
	for _, item := range strings.Split(o.params, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(item), "=")
		if canon := policy.ParamName(name); canon != name {
			fmt.Fprintf(cmd.ErrOrStderr(), "optd search: --params: %q is deprecated: write %s\n", name, canon)
		}
	}
	scn, err := resolveScenario(o.scenario)
	if err != nil {
		return err
	}
	if scn.placement != nil {
		work := *scn.placement
		work.Replications = max(work.Replications, o.replications, o.validation)
		if err := cli.CheckPlacementWork(&work, limits, o.bounds, true); err != nil {
			return fmt.Errorf("--scenario %s: %w", o.scenario, err)
		}
	}
	if err := cli.CheckProgressMode(o.progress); err != nil {
		return err
	}
	prog := cli.NewProgressMode(cmd.ErrOrStderr(), o.progress, "optd search", "preparing", 0, "")
	defer prog.Finish()
	var t *target
	if scn.kind == KindCluster {
		t, err = clusterTarget(cmd, o, scn.cluster, refs)
	} else {
		t, err = placementTarget(cmd, o, scn.placement, refs, prog)
	}
	if err != nil {
		return err
	}
	sp := t.prob.Space()
	reps := o.replications
	if reps == 0 {
		reps = t.replications
	}
	st := Settings{
		ScenarioSHA256: scn.sha256, Policy: o.family, Params: o.params, Objective: t.objective, Method: o.method,
		Evaluations: o.evaluations, TimeBudgetMS: o.timeBudget.Milliseconds(), Replications: reps, Validation: o.validation,
		Seed: o.seed, References: t.refs,
	}
	if t.kind == KindPlacement {
		st.Bounds, st.Classes, st.Window, st.Horizon, st.Exact, st.MaxStates = o.bounds, o.classes, o.window, o.horizon, o.exact, o.maxStates
	}
	opts := search.Options{
		Method: o.method, Evaluations: o.evaluations, Time: o.timeBudget,
		Replications: reps, Validation: o.validation, Seed: o.seed,
	}
	if t.exact != nil {
		opts.Replications, opts.Validation = 1, -1
		st.Replications, st.Validation = 1, -1
	}
	if shardIdx > 0 {
		opts.Seed, opts.Start = restart(sp, o.seed, shardIdx)
	}
	prog.Phase(search.PhaseSearch, 0, opts.Evaluations, "evaluations")
	opts.Progress = func(s search.Status) { reportSearch(prog, s) }
	res, err := search.Run(cmd.Context(), t.prob, opts)
	if err != nil {
		return err
	}
	prog.Finish()
	out := &Output{
		Scenario: o.scenario, Kind: t.kind, Policy: o.family, Objective: t.objective, Space: decls(sp),
		BestPolicy: policy.FormatPlacementSpec(o.family, res.Params), Result: res,
	}
	if ex := t.exact; ex != nil {
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

// reportSearch shows the evaluations the user asked for and the best
// objective so far while the optimizer runs, then the validation's
// simulations.
func reportSearch(prog *cli.Progress, s search.Status) {
	if s.Phase == search.PhaseValidation {
		prog.Phase("validation on fresh replications", s.Simulations, s.SimulationsTotal, "simulations")
		return
	}
	prog.Set(s.Evaluations, s.Budget)
	if !math.IsInf(s.Best, 0) {
		prog.Note(fmt.Sprintf("best %.6g", s.Best))
	}
}

// placementTarget is the search of a placement family on a placement
// scenario: simulated (PlacementProblem, with references and bounds) or,
// with --exact, evaluated on the scenario's MDP after solving it.
func placementTarget(cmd *cobra.Command, o options, s *sim.Scenario, refs []string, prog *cli.Progress) (*target, error) {
	if o.objective != "" && o.objective != ObjectiveMeanCost {
		return nil, fmt.Errorf("--objective %q: %s is a placement scenario, whose objective is %s", o.objective, o.scenario, ObjectiveMeanCost)
	}
	sp, err := search.SpaceOf(o.family)
	if err != nil {
		if _, perr := policy.NewPipeline(o.family, policy.HeartbeatConfig{}); perr == nil {
			return nil, fmt.Errorf("--policy %q is a heartbeat pipeline, and %s is a placement scenario: give a placement family (%s)",
				o.family, o.scenario, strings.Join(search.Families(), ", "))
		}
		return nil, fmt.Errorf("--policy: %w", err)
	}
	if sp, err = sp.Restrict(o.params); err != nil {
		return nil, err
	}
	t := &target{kind: KindPlacement, objective: ObjectiveMeanCost, replications: s.Replications, refs: refs}
	base := policy.PlacementConfig{Window: o.window, Horizon: o.horizon}
	if !o.exact {
		pp := &search.PlacementProblem{Scenario: s, Family: o.family, Params: sp, Config: base, Refs: refs, Bounds: o.bounds, HindsightClasses: o.classes}
		if err := pp.Check(cmd.Context()); err != nil {
			return nil, err
		}
		t.prob = pp
		return t, nil
	}
	model, err := mdp.ModelOf(s)
	if err != nil {
		return nil, fmt.Errorf("--exact: %w", err)
	}
	exact := &search.ExactPlacementProblem{Model: model, Family: o.family, Params: sp, Config: base, Solve: mdp.SolveOptions{MaxStates: o.maxStates}}
	if err := exact.Check(cmd.Context()); err != nil {
		return nil, fmt.Errorf("--exact: %w", err)
	}
	prog.Phase("solving the MDP", 0, 0, "")
	sol, err := mdp.SolvePlacement(cmd.Context(), model, mdp.SolveOptions{MaxStates: o.maxStates})
	if err != nil {
		return nil, fmt.Errorf("--exact: %w", err)
	}
	if !sol.Exact {
		return nil, fmt.Errorf("--exact: the workload is continuous; the MDP only brackets the optimum (give a discrete workload)")
	}
	t.exact = &Exact{States: sol.States, Optimal: sol.Optimal, Greedy: sol.PolicyCosts["greedy"]}
	t.prob = exact
	return t, nil
}

// clusterTarget is the search of a heartbeat pipeline's parameters on a
// cluster scenario (search.PipelineParams): the placement-only flags are
// errors, and --references are pipeline specs, none unless given.
func clusterTarget(cmd *cobra.Command, o options, sc *sim.ClusterScenario, refs []string) (*target, error) {
	for _, name := range placementFlags {
		if cmd.Flags().Changed(name) {
			return nil, fmt.Errorf("--%s applies to placement scenarios only; %s is a cluster scenario", name, o.scenario)
		}
	}
	objective := o.objective
	if objective == "" {
		objective = search.ClusterObjectives()[0]
	}
	if !slices.Contains(search.ClusterObjectives(), objective) {
		return nil, fmt.Errorf("--objective %q: %s is a cluster scenario, whose objective is %s", objective, o.scenario, strings.Join(search.ClusterObjectives(), " or "))
	}
	if slices.Contains(policy.PlacementNames(), o.family) {
		return nil, fmt.Errorf("--policy %q is a placement family, and %s is a cluster scenario: give a heartbeat pipeline spec assignment[+add-on...] as in optd simulate (assignment policies: %s)",
			o.family, o.scenario, strings.Join(policy.AssignmentNames(), ", "))
	}
	prob, err := search.PipelineParams(sc, o.family)
	if err != nil {
		return nil, fmt.Errorf("--policy: %w", err)
	}
	if prob.Params, err = prob.Params.Restrict(o.params); err != nil {
		return nil, err
	}
	if !cmd.Flags().Changed("references") {
		refs = nil
	}
	prob.Objective, prob.Refs = objective, refs
	if err := prob.Check(); err != nil {
		return nil, err
	}
	return &target{kind: KindCluster, prob: prob, objective: objective, replications: search.DefaultReplications, refs: refs}, nil
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

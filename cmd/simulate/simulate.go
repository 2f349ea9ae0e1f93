// Package simulate implements `optd simulate` (docs/formats.md#cluster-scenario): a heartbeat
// policy (an assignment policy with add-ons, policy.NewPipeline) run on a
// built-in or JSON cluster scenario by the cluster simulator of package sim.
//
//	optd simulate --scenario NAME|FILE --policy SPEC [--placement SPEC [--placement-model FILE]] [--seed N] [--csv FILE] [--plot FILE] [--explain]
//
// JSON with every metric on stdout; on a terminal a progress bar and a
// summary table on stderr; --csv writes the utilization time series,
// --plot a figure of it (PNG or SVG by extension).
package simulate

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/adp"        // the fitted placement policies --placement may name
	_ "github.com/optd/optd/policy/builtin"    // every policy --policy may name
	_ "github.com/optd/optd/policy/mdpoptimal" // the MDP's optimal placement, solved on --placement-model
	_ "github.com/optd/optd/policy/rollout"    // and the rollout policy
	"github.com/optd/optd/sim"
)

// DefaultSeed is the seed when --seed is not given.
const DefaultSeed = 1

type options struct {
	scenario, policy string
	placement        string
	placementModel   string
	seed             uint64
	csv, plot        string
	explain          bool
	progress         string
}

// Output is the JSON printed on stdout: the run's identity and every
// metric of sim.ClusterResult (flattened).
type Output struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	// Placement is the reduce-placement policy the pipeline placed
	// reducers with (--placement; absent: none, reducers start anywhere).
	Placement string `json:"placement,omitempty"`
	Seed      uint64 `json:"seed"`
	*sim.ClusterResult
}

// NewCommand returns the `simulate` command.
func NewCommand(_ *cli.Env) *cobra.Command {
	var o options
	cmd := &cobra.Command{
		Use:   "simulate --scenario NAME|FILE --policy SPEC [--placement SPEC [--placement-model FILE]] [--seed N] [--csv FILE] [--plot FILE] [--explain]",
		Short: "Simulate a heartbeat scheduling policy on a cluster",
		Long: `Runs the cluster simulator (nodes with resource vectors or MRv1 slots, heartbeats,
map/reduce tasks with locality, slow-start, shuffle, stages, skew, stragglers) under
a policy and prints makespan, mean response time, utilization, locality,
speculative tasks, fairness and every job's finish time as JSON; with --explain
also the vetoes: by stage, job and task type, how often a filter (delay
scheduling, Slot PreScheduling) or a speculation gate (SEPB, BASE) refused a
candidate, when first and last, and the last reason.

SPEC is an assignment policy optionally followed by +add-ons, e.g. haste,
fair+resource-stealing-ltm+base. Assignment policies: ` + strings.Join(policy.AssignmentNames(), ", ") + `.
Add-ons: ` + addOns() + `.
With --placement, the pipeline places each job's reducers by that reduce-placement
policy when the job reaches slow-start (X estimated from its finished maps'
output, fetch costs from the racks) and starts them only on the chosen nodes;
SPEC is a name, with a family's parameters if any ("state-threshold:base=2").
A policy fitted on the cluster's queueing model (adp-penalty) needs
--placement-model, a placement scenario file whose arrival rate, service rate,
jobs in service, waiting room, workload and slot costs are that model.
Placement policies: ` + strings.Join(policy.PlacementNames(), ", ") + `.
Built-in scenarios: ` + strings.Join(sim.BuiltinClusterNames(), ", ") + `;
any other --scenario is a JSON scenario file.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "built-in scenario name or JSON scenario file")
	f.StringVar(&o.policy, "policy", "", "policy spec: assignment[+add-on...]")
	f.StringVar(&o.placement, "placement", "", "reduce-placement policy the pipeline places reducers with (default: none)")
	f.StringVar(&o.placementModel, "placement-model", "", "placement scenario file: the queueing model a fitted --placement policy (adp-penalty) fits on")
	f.Uint64Var(&o.seed, "seed", DefaultSeed, "seed of block replicas, task works and skew")
	f.StringVar(&o.csv, "csv", "", "write the utilization time series as CSV to this file")
	f.StringVar(&o.plot, "plot", "", "write a utilization plot to this file (.png or .svg)")
	f.BoolVar(&o.explain, "explain", false, "add \"vetoes\": how often each filter or speculation gate refused each job's tasks, and its last reason")
	cli.AddProgressFlag(f, &o.progress)
	_ = cmd.MarkFlagRequired("scenario")
	_ = cmd.MarkFlagRequired("policy")
	return cmd
}

func addOns() string {
	if n := policy.AddOnNames(); len(n) > 0 {
		return strings.Join(n, ", ")
	}
	return "(none registered)"
}

func run(cmd *cobra.Command, o options) error {
	if err := cli.CheckProgressMode(o.progress); err != nil {
		return err
	}
	if o.plot != "" {
		if err := checkPlotExt(o.plot); err != nil {
			return err
		}
	}
	sc, err := LoadScenario(o.scenario)
	if err != nil {
		return err
	}
	cfg := policy.HeartbeatConfig{Seed: o.seed}
	if o.placementModel != "" {
		if o.placement == "" {
			return fmt.Errorf("--placement-model %s: give --placement too (the model is for the placement policy)", o.placementModel)
		}
		ps, err := sim.LoadScenario(o.placementModel)
		if err != nil {
			return fmt.Errorf("--placement-model: %w", err)
		}
		cfg.PlacementModel = ps.PlacementModel()
	}
	pipe, err := newPipeline(o.policy, o.placement, cfg)
	if err != nil {
		return err
	}
	prog := cli.NewProgressMode(cmd.ErrOrStderr(), o.progress, "optd simulate", "simulating", len(sc.Jobs), "jobs finished")
	res, err := sim.RunCluster(cmd.Context(), sc, pipe, sim.ClusterOptions{Seed: o.seed, Explain: o.explain, Progress: func(done, total int) {
		prog.Set(done, total)
	}})
	prog.Finish()
	if err != nil {
		return err
	}
	if o.csv != "" {
		if err := writeCSV(o.csv, res.Series); err != nil {
			return err
		}
	}
	if o.plot != "" {
		if err := writePlot(o.plot, fmt.Sprintf("%s under %s", sc.Name, o.policy), res.Series); err != nil {
			return err
		}
	}
	if cli.IsTerminal(cmd.ErrOrStderr()) {
		summary(cmd.ErrOrStderr(), sc.Name, o.policy, res)
	}
	return cli.WriteJSON(cmd.OutOrStdout(), Output{Scenario: sc.Name, Policy: o.policy, Placement: o.placement, Seed: o.seed, ClusterResult: res})
}

// NewPipeline builds the heartbeat pipeline of spec seeded by seed, with
// reducers placed by the named placement policy (empty: none), as `optd
// simulate` and the server of `optd replay` do.
func NewPipeline(spec, placement string, seed uint64) (*policy.Pipeline, error) {
	return newPipeline(spec, placement, policy.HeartbeatConfig{Seed: seed})
}

func newPipeline(spec, placement string, cfg policy.HeartbeatConfig) (*policy.Pipeline, error) {
	pipe, err := policy.NewPlacedPipeline(spec, placement, cfg)
	switch {
	case err == nil:
		return pipe, nil
	case placement == "":
		return nil, fmt.Errorf("--policy: %w", err)
	default:
		return nil, fmt.Errorf("--policy %q with --placement %q: %w", spec, placement, err)
	}
}

// LoadScenario resolves a built-in name, else reads a file; an unknown
// name that is not a file lists the built-in names.
func LoadScenario(name string) (*sim.ClusterScenario, error) {
	if sc, err := sim.BuiltinCluster(name); err == nil {
		return sc, nil
	}
	if _, err := os.Stat(name); err != nil {
		return nil, fmt.Errorf("--scenario %q: neither a built-in scenario (%s) nor a readable file: %v", name, strings.Join(sim.BuiltinClusterNames(), ", "), err)
	}
	if err := cli.CheckInputKind("scenario", name, "cluster-scenario"); err != nil {
		return nil, err
	}
	sc, err := sim.LoadClusterScenario(name)
	if err != nil {
		return nil, fmt.Errorf("--scenario: %w", err)
	}
	return sc, nil
}

func writeCSV(path string, s *sim.UtilizationSeries) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	if err := s.WriteCSV(f); err != nil {
		f.Close()
		return fmt.Errorf("--csv: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--csv: %w", err)
	}
	return nil
}

// summary prints the headline figures as a table.
func summary(w io.Writer, scenario, spec string, r *sim.ClusterResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "scenario\t%s\n", scenario)
	fmt.Fprintf(tw, "policy\t%s\n", spec)
	fmt.Fprintf(tw, "makespan\t%.1f s\n", r.MakespanS)
	fmt.Fprintf(tw, "mean response\t%.1f s\n", r.MeanResponseS)
	for _, k := range sortedKeys(r.Utilization) {
		fmt.Fprintf(tw, "utilization %s\t%.1f%%\n", k, 100*r.Utilization[k])
	}
	fmt.Fprintf(tw, "locality node/rack/off\t%.1f%% / %.1f%% / %.1f%%\n", 100*r.Locality.NodeLocal, 100*r.Locality.RackLocal, 100*r.Locality.OffRack)
	fmt.Fprintf(tw, "speculative launched/useful/wasted\t%d / %d / %d\n", r.Speculative.Launched, r.Speculative.Useful, r.Speculative.Wasted)
	fmt.Fprintf(tw, "fairness (mean share deviation)\t%.3f\n", r.Fairness.MeanShareDeviation)
	fmt.Fprintf(tw, "events\t%d\n", r.Events)
	_ = tw.Flush()
}

func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	for i := 1; i < len(keys); i++ {
		for k := i; k > 0 && keys[k] < keys[k-1]; k-- {
			keys[k], keys[k-1] = keys[k-1], keys[k]
		}
	}
	return keys
}

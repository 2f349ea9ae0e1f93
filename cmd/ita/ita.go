// Package ita implements `optd ita`, the Initial Task Assignment verb
// (docs/formats.md#ita-instance): it solves an instance with one of the methods of package
// solver and prints the result as JSON on stdout.
package ita

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/solver"
)

// Config holds the flag values of `optd ita`.
type Config struct {
	Instance  string
	Method    string
	TimeLimit time.Duration
	// WorkLimit is the exact method's limit of counted work
	// (solver.Options.WorkLimit); given without --time-limit it replaces
	// the default time limit.
	WorkLimit time.Duration
	// Seed seeds the exact method's random streams (solver.Options.Seed).
	Seed uint64
	NoLP bool
	// Gap is the relative optimality tolerance of the exact method.
	Gap float64
	// Progress is the progress mode on stderr (cli.ProgressModes: a bar
	// on a terminal, plain lines otherwise, ...). The numeric form of
	// the former flag (an interval such as "2s"; "0" for none) is still
	// read, with a deprecation note.
	Progress string
	// ProgressInterval is the period of the plain progress lines.
	ProgressInterval time.Duration
	// Family draws the instance from a family of the robustness suite
	// (with RandomSeed as its seed) instead of Random.
	Family string
	// Random instance (when RandomSeed is set)
	RandomSeed int64
	Random     solver.RandomSpec
}

// Default returns the default configuration: method exact, 10 s time limit.
func Default() Config {
	return Config{
		Method:    string(solver.MethodExact),
		TimeLimit: 10 * time.Second,
		Progress:  cli.ProgressAuto,
		// a MIP solver's log rhythm, not the 5 s of the simulation verbs:
		// a solve with the default 10 s limit shows about ten lines
		ProgressInterval: time.Second,
		Random:           solver.RandomSpec{Nodes: 20, Types: 10, Resources: 2},
	}
}

// ErrUsage is wrapped by errors in the command line itself.
var ErrUsage = errkind.New(errkind.Invalid, "ita: usage")

// NewCommand returns the `ita` command.
func NewCommand(_ *cli.Env) *cobra.Command {
	cfg := Default()
	var randomSet bool
	cmd := &cobra.Command{
		Use:   "ita --instance FILE|NAME [--method exact|per-node|ffd-dp] [--time-limit 10s | --work-limit 2s] [--gap 0] [--seed 0]",
		Short: "Initial task assignment: the multi-resource knapsack over all nodes",
		Long: `Choose how many tasks of each type to start on each node so that no node's
capacity is exceeded in any resource and the total value Σ w_p·demand_p is maximal.

Methods: exact (the proven global optimum; on a time limit the best solution and
its bound with optimal=false), per-node (the published HaSTE Algorithm 1: fill
node 1 optimally, then node 2 with what is left, ...), ffd-dp (the FFD
dot-product greedy of Eq. 1).

Every valid instance is accepted: capacities, demands and counts may be 0; a
task type that fits no node gets no task and is listed under "unplaced" with
the reason.

While it solves, the exact method reports its progress on stderr
(--progress auto: a bar on a terminal, otherwise a plain line every
--progress-interval with elapsed time, phase, incumbent, best proven bound,
relative gap and nodes, as MIP solvers print; plain, bar or none force one);
the result's upper_bound is the best proven bound. --gap stops once
(bound − incumbent) ≤ gap·bound.

The exact method is deterministic: the same instance, limits and --seed give
the same answer in every run of one build, unless the wall-clock --time-limit
is what stops it. --work-limit stops it instead after that much counted work
(search nodes, simplex iterations, DP steps at fixed costs, about CPU time on
the machine they were fitted on; stats.work_ms reports it), the same under any
load; given alone it replaces the default time limit.

--instance is a JSON file (format: ` + "`optd schema ita-instance`, a starter: `optd example ita-instance`" + `) or a built-in name: ` + strings.Join(solver.BuiltinNames(), ", ") + `.
--random SEED draws a random instance instead (see --nodes, --types, ...), or
with --family NAME the instance of that seed from one family of the
robustness suite: ` + strings.Join(solver.FamilyNames(), ", ") + `.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			randomSet = cmd.Flags().Changed("random")
			if cmd.Flags().Changed("work-limit") && !cmd.Flags().Changed("time-limit") {
				cfg.TimeLimit = 0 // the work limit alone, as asked
			}
			return run(cmd, cfg, randomSet)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Instance, "instance", cfg.Instance, "instance JSON file or built-in name ("+strings.Join(solver.BuiltinNames(), ", ")+")")
	f.StringVar(&cfg.Method, "method", cfg.Method, "exact, per-node or ffd-dp")
	f.DurationVar(&cfg.TimeLimit, "time-limit", cfg.TimeLimit, "stop the search after this long (0: no limit)")
	f.DurationVar(&cfg.WorkLimit, "work-limit", cfg.WorkLimit, "exact: stop after this much counted work, the same on any load (0: no limit; alone it replaces the default --time-limit)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "exact: seed of the neighbourhood search and dives (the same seed, the same answer)")
	f.BoolVar(&cfg.NoLP, "no-lp", cfg.NoLP, "exact: do not use the LP (column generation) bound")
	f.Float64Var(&cfg.Gap, "gap", cfg.Gap, "exact: relative optimality tolerance in [0, 1) (0: prove the optimum)")
	cli.AddProgressFlag(f, &cfg.Progress)
	f.Lookup("progress").Usage = "exact: progress on stderr: " + strings.Join(cli.ProgressModes, ", ") +
		" (auto: a bar on a terminal, a plain line every --progress-interval otherwise)"
	f.DurationVar(&cfg.ProgressInterval, "progress-interval", cfg.ProgressInterval, "exact: period of the plain progress lines")
	f.StringVar(&cfg.Family, "family", cfg.Family, "with --random SEED: draw from this family of the robustness suite")
	f.Int64Var(&cfg.RandomSeed, "random", 0, "solve a random instance drawn with this seed instead of --instance")
	f.IntVar(&cfg.Random.Nodes, "nodes", cfg.Random.Nodes, "random instance: number of nodes")
	f.IntVar(&cfg.Random.Types, "types", cfg.Random.Types, "random instance: number of task types")
	f.IntVar(&cfg.Random.Resources, "resources", cfg.Random.Resources, "random instance: number of resources")
	f.IntVar(&cfg.Random.Classes, "classes", cfg.Random.Classes, "random instance: distinct node capacities (0: every node its own)")
	f.Float64Var(&cfg.Random.Supply, "supply", 1.5, "random instance: total demand / total capacity")
	return cmd
}

// randomFlags names the flag that sets each field of solver.RandomSpec
// that RandomInstance checks, so that its error names what the user typed.
var randomFlags = map[string]string{
	"spec.Nodes": "--nodes", "spec.Types": "--types", "spec.Resources": "--resources", "spec.Supply": "--supply",
}

func run(cmd *cobra.Command, cfg Config, random bool) error {
	method, err := solver.ParseMethod(cfg.Method)
	if err != nil {
		return fmt.Errorf("%w: --method: %w", ErrUsage, err)
	}
	if cfg.TimeLimit < 0 {
		return fmt.Errorf("%w: --time-limit %v is negative", ErrUsage, cfg.TimeLimit)
	}
	if cfg.WorkLimit < 0 {
		return fmt.Errorf("%w: --work-limit %v is negative", ErrUsage, cfg.WorkLimit)
	}
	if math.IsNaN(cfg.Gap) || cfg.Gap < 0 || cfg.Gap >= 1 {
		return fmt.Errorf("%w: --gap %v: the relative tolerance must be in [0, 1)", ErrUsage, cfg.Gap)
	}
	mode, err := progressMode(cmd, &cfg)
	if err != nil {
		return err
	}
	if cfg.Family != "" && !random {
		return fmt.Errorf("%w: --family needs --random SEED", ErrUsage)
	}
	var in *solver.Instance
	switch {
	case random && cfg.Instance != "":
		return fmt.Errorf("%w: --instance and --random exclude each other", ErrUsage)
	case random && cfg.Family != "":
		in, err = solver.FamilyInstance(cfg.Family, uint64(cfg.RandomSeed))
		if err != nil {
			return fmt.Errorf("%w: --family: %w", ErrUsage, err)
		}
	case random:
		rng := rand.New(rand.NewPCG(uint64(cfg.RandomSeed), 0x17a))
		in, err = solver.RandomInstance(rng, cfg.Random)
		var ve *solver.ValidationError
		if errors.As(err, &ve) && randomFlags[ve.Field] != "" {
			return fmt.Errorf("%w: %s = %s: %s", ErrUsage, randomFlags[ve.Field], ve.Value, ve.Reason)
		}
		if err != nil {
			return fmt.Errorf("ita: --random: %w", err)
		}
	case cfg.Instance == "":
		return fmt.Errorf("%w: --instance FILE|NAME (or --random SEED) is required", ErrUsage)
	default:
		in, err = LoadInstance(cfg.Instance)
		if err != nil {
			return err
		}
	}
	opts := solver.Options{TimeLimit: cfg.TimeLimit, WorkLimit: cfg.WorkLimit, Seed: cfg.Seed, NoLP: cfg.NoLP, Gap: cfg.Gap}
	if method == solver.MethodExact {
		stop := reportProgress(cmd.ErrOrStderr(), mode, cfg, &opts)
		defer stop()
	}
	res, err := solver.Solve(cmd.Context(), in, method, opts)
	if err != nil {
		return fmt.Errorf("ita: %w", err)
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// progressMode checks --progress and --progress-interval and returns the
// mode. A duration given to --progress (the flag's former meaning, an
// interval) still works: "0" is none, any other the plain lines at that
// interval; a note on stderr says what to write instead.
func progressMode(cmd *cobra.Command, cfg *Config) (string, error) {
	if cfg.ProgressInterval <= 0 {
		return "", fmt.Errorf("%w: --progress-interval %v: must be positive (--progress none prints nothing)", ErrUsage, cfg.ProgressInterval)
	}
	mode := cfg.Progress
	if err := cli.CheckProgressMode(mode); err == nil {
		return mode, nil
	}
	d, perr := time.ParseDuration(mode)
	switch {
	case perr != nil:
		return "", fmt.Errorf("%w: --progress = %q: want one of %s (the interval is --progress-interval)",
			ErrUsage, mode, strings.Join(cli.ProgressModes, ", "))
	case d < 0:
		return "", fmt.Errorf("%w: --progress %v is a negative interval; want one of %s", ErrUsage, d, strings.Join(cli.ProgressModes, ", "))
	case d == 0:
		fmt.Fprintf(cmd.ErrOrStderr(), "optd ita: --progress %s is deprecated: write --progress none\n", mode)
		return cli.ProgressNone, nil
	}
	if cmd.Flags().Changed("progress-interval") {
		return "", fmt.Errorf("%w: --progress %s (a deprecated interval) and --progress-interval exclude each other", ErrUsage, mode)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "optd ita: --progress %s is deprecated: write --progress plain --progress-interval %s\n", mode, mode)
	cfg.ProgressInterval = d
	return cli.ProgressPlain, nil
}

// reportProgress sets opts.Progress to report on w in mode (auto: a bar
// on a terminal, plain lines otherwise) and returns the function that
// ends the reports.
func reportProgress(w io.Writer, mode string, cfg Config, opts *solver.Options) (stop func()) {
	if mode == cli.ProgressAuto {
		mode = cli.ProgressPlain
		if cli.IsTerminal(w) {
			mode = cli.ProgressBar
		}
	}
	switch mode {
	case cli.ProgressPlain:
		keep := newKeepAlive(ProgressPrinter(w), cfg.ProgressInterval)
		opts.Progress, opts.ProgressInterval = keep.report, cfg.ProgressInterval
		return keep.stop
	case cli.ProgressBar:
		bar := newProgressBar(w, cfg.TimeLimit)
		opts.Progress, opts.ProgressInterval = bar.report, cfg.ProgressInterval
		return bar.Finish
	}
	return func() {}
}

// progressBar shows a solve as a bar over its time limit (the share of the
// limit used, in tenths of a percent; a count of reports without a limit)
// described by the phase, incumbent, bound, gap and nodes.
type progressBar struct {
	*cli.Progress
	limit time.Duration
	n     int
}

// barSteps is the bar's length: tenths of a percent of the time limit.
const barSteps = 1000

func newProgressBar(w io.Writer, limit time.Duration) *progressBar {
	total := barSteps
	if limit <= 0 {
		total = 0
	}
	return &progressBar{Progress: cli.NewProgressMode(w, cli.ProgressBar, "optd ita", "starting", total, ""), limit: limit}
}

func (b *progressBar) report(p solver.Progress) {
	b.Describe(p.Phase)
	b.Note(progressNote(p))
	if b.limit > 0 {
		b.Set(min(barSteps, int(barSteps*p.Elapsed/b.limit)), barSteps)
		return
	}
	b.n++
	b.Set(b.n, 0)
}

// progressNote is the incumbent, bound, gap and nodes of a report.
func progressNote(p solver.Progress) string {
	bound, gap := "-", "-"
	if !math.IsInf(p.Bound, 1) {
		bound = strconv.FormatFloat(p.Bound, 'g', 12, 64)
		gap = strconv.FormatFloat(100*p.Gap, 'f', 3, 64) + "%"
	}
	return fmt.Sprintf("incumbent %s  bound %s  gap %s  nodes %d", strconv.FormatFloat(p.Incumbent, 'g', 12, 64), bound, gap, p.NodesExplored)
}

// ProgressPrinter returns a progress callback that writes one line per
// report to w, as MIP solvers do (plain lines, also when w is not a
// terminal):
//
//	ita:   1.00s  search      incumbent 4219.3  bound 4226  gap 0.159%  nodes 203045
func ProgressPrinter(w io.Writer) func(solver.Progress) {
	return func(p solver.Progress) {
		fmt.Fprintf(w, "ita: %7.2fs  %-10s  %s\n", p.Elapsed.Seconds(), p.Phase, progressNote(p))
	}
}

// keepAlive forwards the solver's progress reports and, when the solver
// goes a whole interval without one (a long step of a phase, such as the
// heuristics on a large instance, which took 12 s in silence), repeats the
// last report with the time updated, so that a run is never silent for
// more than the interval.
type keepAlive struct {
	mu    sync.Mutex
	print func(solver.Progress)
	last  solver.Progress
	at    time.Time // when last was printed
	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

func newKeepAlive(print func(solver.Progress), every time.Duration) *keepAlive {
	k := &keepAlive{print: print, start: time.Now(), done: make(chan struct{})}
	k.at = k.start
	k.last = solver.Progress{Phase: "starting", Bound: math.Inf(1), Gap: math.Inf(1)}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-k.done:
				return
			case now := <-t.C:
				k.mu.Lock()
				if now.Sub(k.at) >= every*9/10 {
					p := k.last
					p.Elapsed = now.Sub(k.start)
					k.print(p)
					k.at = now
				}
				k.mu.Unlock()
			}
		}
	}()
	return k
}

func (k *keepAlive) report(p solver.Progress) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last, k.at = p, time.Now()
	k.print(p)
}

func (k *keepAlive) stop() {
	close(k.done)
	k.wg.Wait()
}

// LoadInstance returns the built-in instance of that name, or else decodes
// the file at that path. Errors name the file.
func LoadInstance(nameOrPath string) (*solver.Instance, error) {
	for _, n := range solver.BuiltinNames() {
		if n == nameOrPath {
			return solver.BuiltinInstance(n)
		}
	}
	if err := cli.CheckInputKind("instance", nameOrPath, "ita-instance"); err != nil {
		return nil, err
	}
	f, err := os.Open(nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("ita: --instance %q is neither a built-in name (%s) nor a readable file: %w",
			nameOrPath, strings.Join(solver.BuiltinNames(), ", "), err)
	}
	defer f.Close()
	in, err := solver.DecodeInstance(f)
	if err != nil {
		return nil, fmt.Errorf("ita: instance file %s: %w", nameOrPath, err)
	}
	return in, nil
}

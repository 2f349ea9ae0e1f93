// Package ita implements `optd ita`, the Initial Task Assignment verb
// (CONTRACTS §3): it solves an instance with one of the methods of package
// solver and prints the result as JSON on stdout.
package ita

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
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
	NoLP      bool
	// Random instance (when RandomSeed is set)
	RandomSeed int64
	Random     solver.RandomSpec
}

// Default returns the default configuration: method exact, 10 s time limit.
func Default() Config {
	return Config{
		Method:    string(solver.MethodExact),
		TimeLimit: 10 * time.Second,
		Random:    solver.RandomSpec{Nodes: 20, Types: 10, Resources: 2},
	}
}

// ErrUsage is wrapped by errors in the command line itself.
var ErrUsage = errkind.New(errkind.Invalid, "ita: usage")

// NewCommand returns the `ita` command.
func NewCommand(_ *cli.Env) *cobra.Command {
	cfg := Default()
	var randomSet bool
	cmd := &cobra.Command{
		Use:   "ita --instance FILE|NAME [--method exact|per-node|ffd-dp] [--time-limit 10s]",
		Short: "Initial task assignment: the multi-resource knapsack over all nodes",
		Long: `Choose how many tasks of each type to start on each node so that no node's
capacity is exceeded in any resource and the total value Σ w_p·demand_p is maximal.

Methods: exact (the proven global optimum; on a time limit the best solution and
its bound with optimal=false), per-node (the published HaSTE Algorithm 1: fill
node 1 optimally, then node 2 with what is left, ...), ffd-dp (the FFD
dot-product greedy of Eq. 1).

--instance is a JSON file (CONTRACTS §3) or a built-in name: ` + strings.Join(solver.BuiltinNames(), ", ") + `.
--random SEED draws a random instance instead (see --nodes, --types, ...).`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			randomSet = cmd.Flags().Changed("random")
			return run(cmd, cfg, randomSet)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Instance, "instance", cfg.Instance, "instance JSON file or built-in name ("+strings.Join(solver.BuiltinNames(), ", ")+")")
	f.StringVar(&cfg.Method, "method", cfg.Method, "exact, per-node or ffd-dp")
	f.DurationVar(&cfg.TimeLimit, "time-limit", cfg.TimeLimit, "stop the search after this long (0: no limit)")
	f.BoolVar(&cfg.NoLP, "no-lp", cfg.NoLP, "exact: do not use the LP (column generation) bound")
	f.Int64Var(&cfg.RandomSeed, "random", 0, "solve a random instance drawn with this seed instead of --instance")
	f.IntVar(&cfg.Random.Nodes, "nodes", cfg.Random.Nodes, "random instance: number of nodes")
	f.IntVar(&cfg.Random.Types, "types", cfg.Random.Types, "random instance: number of task types")
	f.IntVar(&cfg.Random.Resources, "resources", cfg.Random.Resources, "random instance: number of resources")
	f.IntVar(&cfg.Random.Classes, "classes", cfg.Random.Classes, "random instance: distinct node capacities (0: every node its own)")
	f.Float64Var(&cfg.Random.Supply, "supply", 1.5, "random instance: total demand / total capacity")
	return cmd
}

func run(cmd *cobra.Command, cfg Config, random bool) error {
	method, err := solver.ParseMethod(cfg.Method)
	if err != nil {
		return fmt.Errorf("%w: --method: %w", ErrUsage, err)
	}
	if cfg.TimeLimit < 0 {
		return fmt.Errorf("%w: --time-limit %v is negative", ErrUsage, cfg.TimeLimit)
	}
	var in *solver.Instance
	switch {
	case random && cfg.Instance != "":
		return fmt.Errorf("%w: --instance and --random exclude each other", ErrUsage)
	case random:
		rng := rand.New(rand.NewPCG(uint64(cfg.RandomSeed), 0x17a))
		in, err = solver.RandomInstance(rng, cfg.Random)
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
	res, err := solver.Solve(cmd.Context(), in, method, solver.Options{TimeLimit: cfg.TimeLimit, NoLP: cfg.NoLP})
	if err != nil {
		return fmt.Errorf("ita: %w", err)
	}
	enc := json.NewEncoder(cmd.OutOrStdout())
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// LoadInstance returns the built-in instance of that name, or else decodes
// the file at that path. Errors name the file.
func LoadInstance(nameOrPath string) (*solver.Instance, error) {
	for _, n := range solver.BuiltinNames() {
		if n == nameOrPath {
			return solver.BuiltinInstance(n)
		}
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

// Package thresholds implements `optd thresholds` (docs/formats.md#thresholds-output): the optimal
// reduce-placement threshold table of Theorems 1-2 (Tan et al., INFOCOM 2013,
// with the recursion conditioned on R) for K sequential jobs drawn from a
// workload file.
//
//	optd thresholds --workload FILE --jobs K [--slot-costs 3,1,2,...] [--format json|csv|table]
//
// Output formats (on stdout, nothing else there):
//
//   - json (default): the object of docs/formats.md#thresholds-output {"jobs", "max_reduces",
//     "stages": [{"job", "thresholds"}], "cost_coefficients",
//     "expected_optimal_cost" (only with --slot-costs)}. It is streamed, one
//     stage per line, so that large tables do not need a second copy in
//     memory; numbers are formatted as encoding/json formats float64.
//   - csv: header "table,job,position,value", then one row per number:
//     "threshold,i,j,q" for stages[i-1].thresholds[j-1] (jobs 1..K−1; job K
//     has none), "cost_coefficient,,j,c" for cost_coefficients[j-1], and, with
//     --slot-costs, a last row "expected_optimal_cost,,,v". Numbers use the
//     shortest representation that round-trips (strconv 'g', -1).
//   - table: a human-readable summary: a header line, one line per job with
//     the number of thresholds and their values (6 significant digits), the
//     cost coefficients, and the expected optimal cost with --slot-costs.
package thresholds

import (
	"bufio"

	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
	"github.com/optd/optd/models"
	"github.com/optd/optd/thresholds"
)

// Formats accepted by --format.
const (
	FormatJSON  = "json"
	FormatCSV   = "csv"
	FormatTable = "table"
)

// NewCommand returns the `optd thresholds` command.
func NewCommand(env *cli.Env) *cobra.Command {
	var (
		workloadPath string
		jobs         int
		slotCosts    string
		format       string
		progress     string
	)
	cmd := &cobra.Command{
		Use:   "thresholds --workload FILE --jobs K [--slot-costs 3,1,2,...] [--format json|csv|table]",
		Short: "Optimal reduce-placement thresholds for K sequential jobs (Theorems 1-2)",
		Long: `Computes, for K jobs whose (X, R) are drawn independently from the workload
and placed one by one on a cluster that starts empty, the thresholds of the
optimal placement: job i with y = X/R skips the c cheapest free slots, where
c is the number of its thresholds strictly greater than y, and takes the next
R. cost_coefficients[j] is the expected Y placed on the j-th cheapest slot;
with --slot-costs the optimal expected total cost Σ_j H_(j)·c_j is printed too.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, env.Config.Limits, workloadPath, jobs, slotCosts, format, progress, cmd.Flags().Changed("slot-costs"))
		},
	}
	f := cmd.Flags()
	f.StringVar(&workloadPath, "workload", "", "workload `FILE` (JSON; format: optd schema workload; a starter: optd example workload)")
	f.IntVar(&jobs, "jobs", 0, "number of sequential jobs K (≥ 1)")
	f.StringVar(&slotCosts, "slot-costs", "", "comma-separated fetch costs of the slots, any order, at least K·max_reduces of them")
	f.StringVar(&format, "format", FormatJSON, "output format: json, csv or table")
	cli.AddProgressFlag(f, &progress)
	config.AddFlags(f, config.Default(), config.KeyMaxMemoryMB)
	_ = cmd.MarkFlagRequired("workload")
	_ = cmd.MarkFlagRequired("jobs")
	return cmd
}

func run(cmd *cobra.Command, limits config.Limits, path string, jobs int, costsFlag, format, progress string, haveCosts bool) error {
	if err := cli.CheckProgressMode(progress); err != nil {
		return err
	}
	switch format {
	case FormatJSON, FormatCSV, FormatTable:
	default:
		return fmt.Errorf("--format = %q: must be json, csv or table", format)
	}
	if jobs < 1 {
		return fmt.Errorf("--jobs = %d: must be at least 1", jobs)
	}
	var costs []float64
	if haveCosts {
		var err error
		if costs, err = ParseSlotCosts(costsFlag); err != nil {
			return err
		}
	}
	if err := cli.CheckInputKind("workload", path, "workload"); err != nil {
		return err
	}
	w, err := models.LoadWorkload(path)
	if err != nil {
		return fmt.Errorf("--workload %s: %w", path, trimPath(err, path))
	}
	if haveCosts {
		if need := float64(jobs) * float64(w.MaxReduces()); float64(len(costs)) < need {
			return fmt.Errorf("--slot-costs: got %d costs, need at least K·max_reduces = %d·%d = %.0f",
				len(costs), jobs, w.MaxReduces(), need)
		}
	}
	rb := w.MaxReduces()
	if err := cli.CheckMemory(fmt.Sprintf("--jobs = %d: the table of K = %d jobs with max_reduces = %d", jobs, jobs, rb),
		thresholds.TableBytes(jobs, rb), limits); err != nil {
		return err
	}
	prog := cli.NewProgressMode(cmd.ErrOrStderr(), progress, "optd thresholds", "backward recursion", jobs, "stages")
	tab, err := thresholds.BuildTable(cmd.Context(), w, jobs, thresholds.Options{
		MaxTableBytes: int64(limits.MaxMemoryMB) << 20,
		Progress:      prog.Set,
	})
	prog.Finish()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	out := Output{Table: tab}
	if haveCosts {
		c, err := tab.ExpectedCost(costs)
		if err != nil {
			return fmt.Errorf("--slot-costs: %w", err)
		}
		out.ExpectedOptimalCost = &c
	}
	bw := bufio.NewWriterSize(cmd.OutOrStdout(), 1<<16)
	switch format {
	case FormatCSV:
		err = out.WriteCSV(bw)
	case FormatTable:
		err = out.WriteText(bw)
	default:
		err = out.WriteJSON(bw)
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	return nil
}

// trimPath drops a leading "path: " from err's message (models.LoadWorkload
// starts its errors with the path, which run already names) while keeping
// the error chain.
func trimPath(err error, path string) error {
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, path+": "); ok {
		return &prefixTrimmed{msg: rest, err: err}
	}
	return err
}

type prefixTrimmed struct {
	msg string
	err error
}

func (e *prefixTrimmed) Error() string { return e.msg }
func (e *prefixTrimmed) Unwrap() error { return e.err }

// ParseSlotCosts parses --slot-costs: comma-separated finite numbers
// (spaces around them allowed).
func ParseSlotCosts(s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	costs := make([]float64, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		c, err := strconv.ParseFloat(p, 64)
		if err != nil || math.IsNaN(c) || math.IsInf(c, 0) {
			return nil, fmt.Errorf("--slot-costs: value %d %q is not a finite number", i+1, p)
		}
		costs = append(costs, c)
	}
	return costs, nil
}

// Output is what `optd thresholds` prints.
type Output struct {
	Table *thresholds.Table
	// ExpectedOptimalCost is Σ_j H_(j)·c_j, present with --slot-costs.
	ExpectedOptimalCost *float64
}

// WriteJSON writes the JSON object of docs/formats.md#thresholds-output.
func (o Output) WriteJSON(w io.Writer) error {
	t := o.Table
	var b []byte
	b = fmt.Appendf(b, "{\n  \"jobs\": %d,\n  \"max_reduces\": %d,\n  \"stages\": [\n", t.Jobs, t.MaxReduces)
	for i, q := range t.Stages {
		b = fmt.Appendf(b, "    {\"job\": %d, \"thresholds\": ", i+1)
		b = appendJSONArray(b, q)
		b = append(b, '}')
		if i < len(t.Stages)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
		if len(b) >= 1<<16 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, "  ],\n  \"cost_coefficients\": "...)
	b = appendJSONArray(b, t.CostCoefficients)
	if o.ExpectedOptimalCost != nil {
		b = append(b, ",\n  \"expected_optimal_cost\": "...)
		b = AppendJSONFloat(b, *o.ExpectedOptimalCost)
	}
	b = append(b, "\n}\n"...)
	_, err := w.Write(b)
	return err
}

func appendJSONArray(b []byte, xs []float64) []byte {
	b = append(b, '[')
	for j, x := range xs {
		if j > 0 {
			b = append(b, ", "...)
		}
		b = AppendJSONFloat(b, x)
	}
	return append(b, ']')
}

// AppendJSONFloat appends x as encoding/json encodes a float64: the shortest
// decimal that round-trips, in exponent form ("1e-7", "1e+21") when
// |x| < 1e-6 or |x| ≥ 1e21. x must be finite (the table never holds NaN or
// ±Inf).
func AppendJSONFloat(b []byte, x float64) []byte {
	abs := math.Abs(x)
	if abs == 0 || (abs >= 1e-6 && abs < 1e21) {
		return strconv.AppendFloat(b, x, 'f', -1, 64)
	}
	b = strconv.AppendFloat(b, x, 'e', -1, 64)
	// Two-digit negative exponents lose their leading zero: e-07 → e-7.
	if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// WriteCSV writes the csv format (see the package documentation).
func (o Output) WriteCSV(w io.Writer) error {
	t := o.Table
	b := []byte("table,job,position,value\n")
	flush := func() error {
		if len(b) < 1<<16 {
			return nil
		}
		_, err := w.Write(b)
		b = b[:0]
		return err
	}
	for i, q := range t.Stages {
		for j, x := range q {
			b = fmt.Appendf(b, "threshold,%d,%d,", i+1, j+1)
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
			b = append(b, '\n')
			if err := flush(); err != nil {
				return err
			}
		}
	}
	for j, x := range t.CostCoefficients {
		b = fmt.Appendf(b, "cost_coefficient,,%d,", j+1)
		b = strconv.AppendFloat(b, x, 'g', -1, 64)
		b = append(b, '\n')
		if err := flush(); err != nil {
			return err
		}
	}
	if o.ExpectedOptimalCost != nil {
		b = append(b, "expected_optimal_cost,,,"...)
		b = strconv.AppendFloat(b, *o.ExpectedOptimalCost, 'g', -1, 64)
		b = append(b, '\n')
	}
	_, err := w.Write(b)
	return err
}

// WriteText writes the table format (see the package documentation).
func (o Output) WriteText(w io.Writer) error {
	t := o.Table
	if _, err := fmt.Fprintf(w, "K = %d jobs, max_reduces = %d; job i skips the c cheapest free slots, c = #{thresholds > X/R}\n", t.Jobs, t.MaxReduces); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "job\tthresholds\tvalues (expected Y on the j-th cheapest slot left, j = 1, 2, ...)")
	for i, q := range t.Stages {
		fmt.Fprintf(tw, "%d\t%d\t%s\n", i+1, len(q), formatList(q))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "cost coefficients (%d): %s\n", len(t.CostCoefficients), formatList(t.CostCoefficients))
	if o.ExpectedOptimalCost != nil {
		fmt.Fprintf(w, "expected optimal cost: %s\n", strconv.FormatFloat(*o.ExpectedOptimalCost, 'g', 6, 64))
	}
	return nil
}

func formatList(xs []float64) string {
	if len(xs) == 0 {
		return "-"
	}
	var b []byte
	for j, x := range xs {
		if j > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, x, 'g', 6, 64)
	}
	return string(b)
}

package benchmarks

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Metric is one figure of a benchmark run besides its time.
type Metric struct {
	Value float64
	Unit  string
	// Rate: Value is a count per run (events, jobs); the result reports
	// the total over all runs divided by their total time, in Unit (which
	// should end in "/s").
	Rate bool
}

// BenchResult is a measured benchmark, written in the `go test -bench`
// format so that benchstat can compare two reports.
type BenchResult struct {
	// Name without the "Benchmark" prefix, sub-benchmarks separated by "/"
	// and named by size ("ITA/instance=haste-table2/solver=exact").
	Name    string
	N       int
	NsPerOp float64
	Metrics []Metric
}

// Line is the benchmark line, e.g.
// "BenchmarkITA/instance=x/solver=exact-2  3  12345 ns/op  1 proven".
func (r BenchResult) Line(procs int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Benchmark%s-%d\t%d\t%s ns/op", r.Name, procs, r.N, strconv.FormatFloat(r.NsPerOp, 'f', 0, 64))
	for _, m := range r.Metrics {
		fmt.Fprintf(&b, "\t%s %s", strconv.FormatFloat(m.Value, 'g', 6, 64), m.Unit)
	}
	return b.String()
}

// Seconds is the time per run in seconds.
func (r BenchResult) Seconds() float64 { return r.NsPerOp / 1e9 }

// Metric returns the value of the metric with the given unit (NaN-free: 0
// and false when absent).
func (r BenchResult) Metric(unit string) (float64, bool) {
	for _, m := range r.Metrics {
		if m.Unit == unit {
			return m.Value, true
		}
	}
	return 0, false
}

// writeBenchHeader writes the configuration lines benchstat groups by.
func writeBenchHeader(w io.Writer, m Machine) {
	fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/optd/optd/benchmarks\ncpu: %s\n", m.OS, m.Arch, m.CPU)
}

// Measure runs f until it has run for at least minTime in total or maxN
// times (at least once) and returns the mean time per run. Metrics are the
// last run's, except Rate metrics, which are summed over the runs and
// divided by the total time. It stops at the first error.
func Measure(ctx context.Context, name string, minTime time.Duration, maxN int, f func(ctx context.Context) ([]Metric, error)) (BenchResult, error) {
	r := BenchResult{Name: name}
	var total time.Duration
	var last []Metric
	var sums []float64
	for r.N == 0 || (total < minTime && r.N < maxN) {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		t0 := time.Now()
		ms, err := f(ctx)
		total += time.Since(t0)
		if err != nil {
			return r, fmt.Errorf("%s: %w", name, err)
		}
		r.N++
		if sums == nil {
			sums = make([]float64, len(ms))
		}
		for i, m := range ms {
			if m.Rate && i < len(sums) {
				sums[i] += m.Value
			}
		}
		last = ms
	}
	r.NsPerOp = float64(total.Nanoseconds()) / float64(r.N)
	for i, m := range last {
		if m.Rate {
			m.Value = sums[i] / total.Seconds()
		}
		r.Metrics = append(r.Metrics, m)
	}
	return r, nil
}

// Command report regenerates optd's reproduction and performance report:
// benchmarks/RESULTS.md, benchmarks/figures/*.png|svg and
// benchmarks/raw/*.txt (see package benchmarks).
//
//	go run ./benchmarks/cmd/report [--quick] [--out DIR] [--data data] [--seed 1] [--only a,b]
//
// Run it from the module root (make bench, make bench-quick). Progress goes
// to stderr; the exit status is non-zero when a section failed. A --quick
// run's smaller numbers never replace the committed report: its default
// --out is a scratch directory (QuickOutDir), and --quick with --out
// benchmarks is refused.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/optd/optd/benchmarks"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "smaller experiments (under 3 minutes on 2 cores; for CI)")
	out := fs.String("out", "", "directory for RESULTS.md, figures/ and raw/ (default: "+CommittedOutDir+", or "+QuickOutDir()+" with --quick)")
	data := fs.String("data", "data", "directory of the public traces (trace sections are skipped when absent)")
	seed := fs.Uint64("seed", benchmarks.DefaultSeed, "seed of every random choice")
	only := fs.String("only", "", "comma-separated sections to run (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch {
	case *out == "" && *quick:
		*out = QuickOutDir()
	case *out == "":
		*out = CommittedOutDir
	case *quick && sameDir(*out, CommittedOutDir):
		return fmt.Errorf("--quick --out %s: a quick run must not replace the committed report; leave --out out (it writes to %s) or name another directory", *out, QuickOutDir())
	}
	if *quick {
		fmt.Fprintf(os.Stderr, "report: --quick writes to %s\n", *out)
	}
	if *seed == 0 {
		return fmt.Errorf("--seed = 0: must be ≥ 1")
	}
	var sections []string
	if *only != "" {
		sections = strings.Split(*only, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return benchmarks.Run(ctx, benchmarks.Config{
		Quick: *quick, OutDir: *out, DataDir: *data, Seed: *seed, Only: sections,
		Log: os.Stderr, Command: "go run ./benchmarks/cmd/report" + argString(args),
	})
}

// CommittedOutDir is where the full report is committed.
const CommittedOutDir = "benchmarks"

// QuickOutDir is the scratch directory of a --quick run.
func QuickOutDir() string { return filepath.Join(os.TempDir(), "optd-report-quick") }

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && filepath.Clean(aa) == filepath.Clean(bb)
}

// argString renders the arguments as they were given, for the report.
func argString(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return " " + strings.Join(args, " ")
}

// Package benchmarks regenerates optd's reproduction and performance report,
// benchmarks/RESULTS.md with its figures (benchmarks/figures/*.png and *.svg,
// drawn with gonum plot) and the raw benchmark lines (benchmarks/raw/*.txt,
// in the `go test -bench` format that benchstat reads), from one command:
//
//	make bench         # go run ./benchmarks/cmd/report
//	make bench-quick   # go run ./benchmarks/cmd/report --quick
//
// # Sections
//
// The report is a list of sections (Sections, in sections.go), one file each.
// A section is a function of the run's Env that returns Markdown, figures and
// raw benchmark results; Run lays them out under their group (reproduction of
// the papers, performance, real traces), saves the figures and writes the raw
// files. Adding a section is one file and one line in the list. A section that
// cannot run on this machine (no cbc, no trace data) returns a *SkipError and
// the report says why instead of failing.
//
// Every number in RESULTS.md is computed by the command: the seeds are in the
// Config (and printed), the machine and the versions of Go, Clp, CBC and GLPK
// are read at run time, and every timing is measured in the same run as the
// figure it is compared with. Quick mode (--quick) shrinks the experiments
// (fewer jobs, replications and instances, shorter time limits) so that the
// whole report runs in under 3 minutes; CI runs it to check that it runs, not
// its numbers.
package benchmarks

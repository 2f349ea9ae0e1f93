// Package benchmarks will regenerate the reproduction and performance report
// (benchmarks/RESULTS.md and figures) from one command.
//
// It is filled by the reproduction-report issue; it has no code yet.
package benchmarks

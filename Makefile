# optd developer targets. The report is described in benchmarks/doc.go.

.PHONY: bench bench-quick

# Regenerate benchmarks/RESULTS.md, benchmarks/figures/ and benchmarks/raw/
# (under 30 minutes on 2 cores).
bench:
	go run ./benchmarks/cmd/report

# The same report with smaller experiments (under 3 minutes; what CI runs).
bench-quick:
	go run ./benchmarks/cmd/report --quick

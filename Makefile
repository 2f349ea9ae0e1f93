# optd developer targets. The report is described in benchmarks/doc.go.

.PHONY: bench bench-quick

# Regenerate benchmarks/RESULTS.md, benchmarks/figures/ and benchmarks/raw/
# (under 30 minutes on 2 cores).
bench:
	go run ./benchmarks/cmd/report

# The same report with smaller experiments (under 3 minutes; what CI runs),
# written to a scratch directory ($TMPDIR/optd-report-quick), never over
# the committed report.
bench-quick:
	go run ./benchmarks/cmd/report --quick

.PHONY: growth robustness

# A million jobs through one heartbeat cluster while one job stays active:
# the stored event log stays bounded, and a fresh process restarts from it
# (time and memory logged). About half an hour on 2 cores.
growth:
	OPTD_GROWTH_JOBS=1000000 go test ./server -run '^TestHeartbeatLogFollowsLiveState$$' -v -count=1 -timeout 3h

# The robustness harness (internal/robustness): 16 clients against a
# server killed with SIGKILL 100 times, damage injected into copies of its
# data directory, the final state checked against the acknowledged
# history. CI runs a short version (go test ./internal/robustness).
robustness:
	OPTD_ROBUSTNESS_CYCLES=100 go test ./internal/robustness -run '^TestRobustness$$' -v -count=1 -timeout 3h

.PHONY: doc-commands

# Run every ```sh block of README.md and docs/ against a fresh bin/optd (and
# a live optd serve for the gRPC examples): about four minutes on 2 cores.
doc-commands:
	OPTD_DOC_COMMANDS=1 go test ./docs -run '^TestDocCommands$$' -v -count=1 -timeout 2h

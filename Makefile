# optd developer targets. The report is described in benchmarks/doc.go.

.PHONY: bench bench-quick

# Regenerate benchmarks/RESULTS.md, benchmarks/figures/ and benchmarks/raw/
# (about 45 minutes on 2 cores; RESULTS.md gives each section's time).
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

.PHONY: ita-suite ita-suite-fresh ita-repeat ita-bench ita-compare early-reducers

# 5000 random scenarios whose reducers start early (slow start 0, no
# ramp-up, in most), each under 7 policies: every run ends, invariants and
# the lower bound hold, reducers preempted where they deadlock with maps.
early-reducers:
	OPTD_EARLY_REDUCER_SCENARIOS=5000 go test ./sim -run '^TestRandomEarlyReducersAlwaysEnd$$' -v -count=1 -timeout 1h


# The exact ITA alone on the whole robustness suite (130 instances, 10 s
# limit each; about 5 minutes on 2 cores): proven counts and times per
# family. The benchmark report (perf-ita) adds CBC and HiGHS.
ita-suite:
	OPTD_SUITE=1 go test ./solver -run '^TestExactOnWholeSuite$$' -v -count=1 -timeout 1h

# The same on seeds 4000-4009 of every family, which no parameter was
# chosen on (the suite's own seeds are 0-9).
ita-suite-fresh:
	OPTD_SUITE=1 OPTD_SUITE_SEED0=4000 go test ./solver -run '^TestExactOnWholeSuite$$' -v -count=1 -timeout 1h

# Instances of the suite (ITA_ONLY, names such as yarn-7) solved ITA_RUNS
# times each with the solver's random streams varied (Options.Seed 0 to
# ITA_RUNS-1), 10 s limit: in how many runs each is proven. One seed says
# little: the path is the same at a seed, but whether a seed's path finds the
# optimum in time is luck where the LNS may settle below it.
ITA_ONLY ?= yarn-7,many-resources-5
ITA_RUNS ?= 10
ita-repeat:
	OPTD_SUITE=1 OPTD_SUITE_ONLY=$(ITA_ONLY) OPTD_SUITE_RUNS=$(ITA_RUNS) OPTD_SUITE_VARY_SEED=1 go test ./solver -run '^TestExactOnWholeSuite$$' -v -count=1 -timeout 1h

# The exact ITA's speed on every suite instance, ITA_COUNT runs of each
# (about 25 s per run), in benchstat's format with the nodes per solve:
# compare two builds by running this for each, alternately, and
# `benchstat old.txt new.txt` (a change of speed alone leaves nodes/op).
ITA_COUNT ?= 6
ita-bench:
	go test ./solver -run '^$$' -bench '^BenchmarkExactSuite$$' -benchtime 1x -count $(ITA_COUNT) -timeout 1h

# optd, CBC and HiGHS on the first ITA_SEEDS seeds of every family (10 s
# limit, one thread each; about 3 minutes per seed on 2 cores), written to
# $(TMPDIR)/optd-ita-compare, never over the committed report.
ITA_SEEDS ?= 3
ita-compare:
	OPTD_ITA_SEEDS=$(ITA_SEEDS) go run ./benchmarks/cmd/report --only perf-ita --out $${TMPDIR:-/tmp}/optd-ita-compare

.PHONY: penalty-report penalty-analog penalty-scale penalty-resampled lagrange-scale rollout-check rollout-scale traces-rolling

# The rollout against state-threshold, adp-bid-price, receding-horizon and
# greedy on the Fig. 9 setting beyond the paper (K = 100 at rho = 0.6 and
# 0.9, K = 20 and 10 at rho = 0.9; 5 replications of 10,000 jobs): paired
# savings and time per job (about 40 minutes on 2 shared cores). Set
# OPTD_ROLLOUT_SCENARIO=FILE for another placement scenario (e.g.
# search/testdata/swim-fb2010.json), OPTD_ROLLOUT_POLICIES, _JOBS, _REPS.
rollout-scale:
	OPTD_ROLLOUT_SCALE=1 go test ./policy/rollout -run '^TestRolloutScale$$' -v -count=1 -timeout 3h

# rolling-horizon with a window that holds SWIM FB-2010's heavy tail
# (window=3000;horizon=5: optd search of rolling-horizon on the trace finds
# window=5000;horizon=7, about as good) against its defaults (window 100,
# horizon 10) and the rollout on it with futures from the jobs seen, paired
# over 10 replications of the whole trace (about 10 minutes on 2 cores;
# OPTD_ROLLOUT_REPS=5 are the traces section's replications).
traces-rolling:
	OPTD_ROLLOUT_SCALE=1 OPTD_ROLLOUT_REPS=$${OPTD_ROLLOUT_REPS:-10} OPTD_ROLLOUT_SCENARIO=$(CURDIR)/search/testdata/swim-fb2010.json \
	OPTD_ROLLOUT_POLICIES='rolling-horizon,rollout:base_policy=2;window=3000;rh_horizon=5;samples=32;future_law=1,rolling-horizon:window=3000;horizon=5' \
	go test ./policy/rollout -run '^TestRolloutScale$$' -v -count=1 -timeout 1h

# The rollout placement policy evaluated exactly on every MDP-solvable
# scenario, on both base policies (the -race suite checks two of them).
rollout-check:
	OPTD_ROLLOUT_ALL=1 go test ./policy/rollout -run '^TestRolloutOnSolvableScenarios$$' -v -count=1 -timeout 30m

# The penalized hindsight bound's and the value-penalty bound's ratios to
# the exact MDP optimum on the issue's three scenarios and 20 generated
# ones, with the MDP's solve time beside the value bound's (a markdown
# table; about 18 minutes on 2 cores shared with other work;
# OPTD_PENALTY_SKIP_LP=1 for the value bound alone, 2 minutes).
penalty-report:
	OPTD_PENALTY_REPORT=1 go test ./mdp -run '^TestPenaltyReport$$' -v -count=1 -timeout 2h

# Where the MDP is solved, is the penalized bound's gap at scale its
# features'? On six analogs of the Fig. 9 setting at rho = 0.9 (a few
# slots of linearly spread costs, Y = X/R spread wide, K-limited processor
# sharing): the optimum, greedy, state-threshold, the value-penalty bound,
# the hindsight LP and the penalized LP with the at-scale features (theta
# fitted on the coarse cluster or on the exact costs, each with the default
# step and ten times it) and the per-class ones (a markdown table), then the
# optimal policy's relative value regressed on feature families (six
# analogs and three fits took about 25 minutes on a loaded machine, five
# fits were not timed whole; OPTD_PENALTY_ANALOGS=4 and
# OPTD_PENALTY_ANALOG_FITS="name;name" keep fewer: four analogs and three
# fits took 10 minutes).
penalty-analog:
	OPTD_PENALTY_ANALOG=1 go test ./mdp -run '^TestFig9Analog' -v -count=1 -timeout 2h

# The penalized bound at scale: its lift over the Lagrangian hindsight bound
# and the certified gaps of greedy and state-threshold on the Fig. 9 setting
# beyond the paper (K = 100, rho = 0.6 and 0.9) and on SWIM FB-2010 (the
# whole trace), 3 replications each, with time and memory per replication
# (about an hour on 2 cores shared with other work; 600 fit steps, the fit
# at rho = 0.9 about 28 minutes on a loaded machine). OPTD_PENALTY_REPS,
# _STEPS, _JOBS, _FIT_JOBS, _LSTEPS change the sizes; OPTD_PENALTY_LBOX=20
# also prints each Lagrangian's bound within its first 20 s (the report's pathwise bounds' box),
# OPTD_PENALTY_LCHECK=300 its bound at step 300 (what more _LSTEPS add);
# OPTD_PENALTY_WARM_FROM=<scenario> starts the fits from θ fitted on that
# scenario (_WARM_STEPS steps, e.g. the next lower load:
# search/testdata/fig9-rho0.8.json before fig9-rho0.9.json). With 8 or more
# replications of a workload scenario it also prints the means controlled
# by the queue's martingale (narrower intervals, the same expectations).
# OPTD_PENALTY_VARIANTS=penalized,big-others-finer fits optional features
# beside the default ones and evaluates both on the same replications
# (twice the fitting time; mdp's penaltyVariants lists them).
penalty-scale:
	OPTD_PENALTY_SCALE=1 OPTD_PENALTY_SCENARIOS=$(CURDIR)/search/testdata/fig9-rho0.6.json,$(CURDIR)/search/testdata/fig9-rho0.9.json,$(CURDIR)/search/testdata/swim-fb2010.json go test ./mdp -run '^TestPenaltyScale$$' -v -count=1 -timeout 3h

# The same on SWIM FB-2010's arrivals with each job's (X, R) drawn i.i.d.
# from the trace's empirical law (mdp.ResampledMarks), where the penalty's
# mark terms apply: a bound and gaps for that model, not for the trace
# itself (5 replications, about 15 minutes).
penalty-resampled:
	OPTD_PENALTY_SCALE=1 OPTD_PENALTY_RESAMPLE=1 OPTD_PENALTY_REPS=5 OPTD_PENALTY_SCENARIOS=$(CURDIR)/search/testdata/swim-fb2010.json go test ./mdp -run '^TestPenaltyScale$$' -v -count=1 -timeout 3h

# Time, steps and memory of the level bound and the Lagrangian hindsight
# bound (60 s each) on the Fig. 9 setting at rho = 0.9 with 2k (against the
# exact LP; OPTD_LAGRANGE_SIZES=5000 for 5k against it), 10k, 50k and 200k
# jobs, then 50k jobs at rho = 0.95 (about ten minutes on 2 cores).
lagrange-scale:
	OPTD_LAGRANGE_SCALE=1 go test ./mdp -run '^TestLagrangianScale$$' -v -count=1 -timeout 1h
	OPTD_LAGRANGE_SCALE=1 OPTD_LAGRANGE_RHO=0.95 OPTD_LAGRANGE_SIZES=50000 go test ./mdp -run '^TestLagrangianScale$$' -v -count=1 -timeout 1h

.PHONY: doc-commands

# Run every ```sh block of README.md and docs/ against a fresh bin/optd (and
# a live optd serve for the gRPC examples): about four minutes on 2 cores.
doc-commands:
	OPTD_DOC_COMMANDS=1 go test ./docs -run '^TestDocCommands$$' -v -count=1 -timeout 2h

package solver

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestExactOnWholeSuite runs the exact method on every instance of the
// robustness suite (OPTD_SUITE=1; `make ita-suite`) with the time limit
// OPTD_SUITE_LIMIT seconds (default 10), optionally one family
// (OPTD_SUITE_FAMILY) and fewer seeds (OPTD_SUITE_SEEDS) from a first
// seed (OPTD_SUITE_SEED0, default 0; 4000 and beyond are seeds nobody tuned
// on: make ita-suite-fresh), or a list of
// instances (OPTD_SUITE_ONLY="hetero-3r-2,yarn-0"), each solved
// OPTD_SUITE_RUNS times (default 1; with OPTD_SUITE_VARY_SEED=1 run r
// uses Options.Seed r, the streams of the LNS and the dives, else every
// run the same seed, and the same path unless the time limit binds: the
// budgets count operations, see workClock), with how many of its runs proved it; OPTD_SUITE_CBC=1 runs
// `cbc -threads 1` with the same limit on each instance after optd and
// checks the two against each other (CBC's objective within optd's bound,
// equal proven optima) and prints where optd's incumbent is below CBC's
// (the target: never, wherever a solver stops at its limit) and
// where CBC proved the optimum sooner than optd (the target: nowhere);
// OPTD_SUITE_HIGHS=1 does the same with HiGHS (the highs npm package that
// scripts/setup.sh --bench installs, one thread), after CBC where both run;
// OPTD_SUITE_WORK=1 prints each solve's counts of the work clock (the
// calibration of workCost); OPTD_SUITE_WORK_LIMIT (seconds of counted
// work, Options.WorkLimit) stops each solve at that work instead of at the
// wall clock's limit, which then only guards against a runaway (ten times
// the work limit), so that a solve stops at the same point and an A/B
// comparison takes the same paths under any load (the peers keep the wall
// clock's limit OPTD_SUITE_LIMIT); OPTD_SUITE_TRACE=1
// prints the phases (with their start times) of every solve that answers
// after its time limit. It checks every
// result (feasible, bound at or above the objective, an optimum closes the
// gap) and prints per instance and per family what the method proved and
// in how long (wall clock, and the process's CPU time, steadier on a
// loaded machine), and the largest overrun of the time limit: the figures of
// the benchmark report for optd alone, in minutes rather than the
// report's hour with the peers. Times are printed, never asserted.
func TestExactOnWholeSuite(t *testing.T) {
	if os.Getenv("OPTD_SUITE") == "" {
		t.Skip("set OPTD_SUITE=1 (make ita-suite) to run the whole suite")
	}
	limit := envSeconds(t, "OPTD_SUITE_LIMIT", 10*time.Second)
	workLimit := envSeconds(t, "OPTD_SUITE_WORK_LIMIT", 0)
	seeds := uint64(FamilySeeds)
	if s := os.Getenv("OPTD_SUITE_SEEDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("OPTD_SUITE_SEEDS = %q: want a count > 0", s)
		}
		seeds = uint64(n)
	}
	seed0 := uint64(0)
	if s := os.Getenv("OPTD_SUITE_SEED0"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("OPTD_SUITE_SEED0 = %q: want a seed ≥ 0", s)
		}
		seed0 = n
	}
	only := os.Getenv("OPTD_SUITE_FAMILY")
	var picked map[string]bool
	if s := os.Getenv("OPTD_SUITE_ONLY"); s != "" {
		picked = map[string]bool{}
		for _, name := range strings.Split(s, ",") {
			picked[strings.TrimSpace(name)] = true
		}
	}
	runs := 1
	if s := os.Getenv("OPTD_SUITE_RUNS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			t.Fatalf("OPTD_SUITE_RUNS = %q: want a count > 0", s)
		}
		runs = n
	}
	varySeed := os.Getenv("OPTD_SUITE_VARY_SEED") != ""
	trace := os.Getenv("OPTD_SUITE_TRACE") != "" // print the phases of the solves that answer late
	// the MIP peers run after optd on each instance with the same limit
	type peer struct {
		name           string
		run            func(context.Context, string, string, *Instance, time.Duration) (cbcResult, error)
		proven, better int
		faster         int // proved it sooner than optd (or where optd did not)
		refuted        int // claimed an optimum below the value of optd's checked assignment
		invalid        int // answered counts that break a row of the instance
	}
	var peers []*peer
	if os.Getenv("OPTD_SUITE_CBC") != "" {
		peers = append(peers, &peer{name: "cbc", run: runCBC})
	}
	if os.Getenv("OPTD_SUITE_HIGHS") != "" {
		peers = append(peers, &peer{name: "highs", run: runHiGHS})
	}
	showWork := os.Getenv("OPTD_SUITE_WORK") != "" // each solve's counts of the work clock (calibration of workCost)
	peerDir := t.TempDir()
	var all []float64
	proven, within1, overrun := 0, 0, 0.0
	for _, f := range Families() {
		if only != "" && f.Name != only {
			continue
		}
		var times []float64
		famProven := 0
		for seed := seed0; seed < seed0+seeds; seed++ {
			if picked != nil && !picked[fmt.Sprintf("%s-%d", f.Name, seed)] {
				continue
			}
			in := f.Instance(seed)
			instProven := 0
			for run := range runs {
				cpu0 := cpuTime()
				opts := Options{TimeLimit: limit}
				if workLimit > 0 {
					opts = Options{WorkLimit: workLimit, TimeLimit: 10 * workLimit}
				}
				if varySeed {
					opts.Seed = uint64(run)
				}
				var phases []Progress // phase changes, to find what overruns the limit
				if trace {
					opts.Progress = func(p Progress) {
						if len(phases) == 0 || phases[len(phases)-1].Phase != p.Phase {
							phases = append(phases, p)
						}
					}
				}
				ctx := context.Background()
				var (
					workMu sync.Mutex
					work   string // a solve stopped at its limit reports its work later, if at all
				)
				if showWork {
					ctx = withWorkReport(ctx, func(counts [numWorkKinds]int64, done time.Duration) {
						workMu.Lock()
						defer workMu.Unlock()
						work = fmt.Sprintf(" work %v counts %v", done, counts)
					})
				}
				r, err := Exact(ctx, in, opts)
				cpu := cpuTime() - cpu0
				if err != nil {
					t.Fatal(err)
				}
				checkFeasible(t, in, r)
				if r.UpperBound < r.Objective-objTol*max(1, r.Objective) || (r.Optimal && r.UpperBound != r.Objective) {
					t.Fatalf("%s-%d: objective %v, bound %v, optimal %v", f.Name, seed, r.Objective, r.UpperBound, r.Optimal)
				}
				times = append(times, r.ElapsedMS)
				if r.Optimal {
					famProven++
					instProven++
					if r.ElapsedMS <= 1000 {
						within1++
					}
				} else {
					if workLimit == 0 {
						overrun = max(overrun, r.ElapsedMS/float64(limit.Milliseconds())-1)
					}
					if trace && r.ElapsedMS > float64(limit.Milliseconds()) {
						for _, p := range phases {
							fmt.Printf("    %s-%d late: phase %q from %v\n", f.Name, seed, p.Phase, p.Elapsed)
						}
					}
				}
				workMu.Lock()
				fmt.Printf("%-16s %d optimal=%-5v %9.1f ms (CPU %7.1f ms) objective %v bound %v nodes %d LP solves %d stopped %q%s%s\n",
					f.Name, seed, r.Optimal, r.ElapsedMS, float64(cpu.Microseconds())/1000, r.Objective, r.UpperBound, r.Stats.NodesExplored, r.Stats.LPSolves, r.Stats.Stopped, runLabel(runs, run, opts.Seed), work)
				workMu.Unlock()
				for _, pe := range peers {
					name := fmt.Sprintf("%s-%d", f.Name, seed)
					cb, err := pe.run(context.Background(), peerDir, name, in, limit)
					if err != nil {
						t.Fatalf("%s: %s: %v", name, pe.name, err)
					}
					// the peer's counts are checked (CheckCounts): worth more
					// than optd's bound, they prove that bound wrong
					if cb.objective > r.UpperBound+objTol*max(1, r.UpperBound) {
						t.Fatalf("%s: optd %v (bound %v, optimal %v), %s's checked solution %v (%s)", name, r.Objective, r.UpperBound, r.Optimal, pe.name, cb.objective, cb.status)
					}
					worse := ""
					if cb.invalid != "" {
						worse += fmt.Sprintf("  << %s's answer is no solution (%s)", pe.name, cb.invalid)
						pe.invalid++
					}
					if cb.refutedBy(r) {
						worse += fmt.Sprintf("  << %s claimed optimal below optd's checked %v", pe.name, r.Objective)
						cb.optimal = false
						pe.refuted++
					}
					if cb.objective > r.Objective+objTol*max(1, r.Objective) {
						worse = "  << optd's incumbent below " + pe.name + "'s"
						pe.better++
					}
					if cb.optimal {
						pe.proven++
						if !r.Optimal || cb.elapsed.Seconds()*1000 < r.ElapsedMS {
							worse += "  << " + pe.name + " proved it sooner"
							pe.faster++
						}
					}
					fmt.Printf("%-16s %d %-6s optimal=%-5v %9.1f ms objective %v%s\n", f.Name, seed, pe.name, cb.optimal, float64(cb.elapsed.Microseconds())/1000, cb.objective, worse)
				}
			}
			if runs > 1 {
				fmt.Printf("== %s-%d: proven in %d of %d runs\n", f.Name, seed, instProven, runs)
			}
		}
		if len(times) == 0 {
			continue
		}
		proven += famProven
		all = append(all, times...)
		slices.Sort(times)
		fmt.Printf("== %s: proven %d of %d, median %.1f ms, max %.1f ms\n", f.Name, famProven, len(times), times[len(times)/2], times[len(times)-1])
	}
	if len(all) == 0 {
		t.Fatalf("no family named %q (want one of %v)", only, FamilyNames())
	}
	slices.Sort(all)
	limitSaid := fmt.Sprintf("the limit %v", limit)
	if workLimit > 0 {
		limitSaid = fmt.Sprintf("the work limit %v", workLimit)
	}
	fmt.Printf("== suite: proven %d of %d (%d within 1 s) with %s; median %.1f ms, max %.1f ms; largest overrun of the limit %.2f%%\n",
		proven, len(all), within1, limitSaid, all[len(all)/2], all[len(all)-1], 100*overrun)
	for _, pe := range peers {
		fmt.Printf("== %s: proven %d of %d; optd's incumbent below %s's on %d; %s proved sooner than optd on %d; its claimed optimum refuted by optd's checked assignment on %d; its answer no solution on %d\n",
			pe.name, pe.proven, len(all), pe.name, pe.better, pe.name, pe.faster, pe.refuted, pe.invalid)
	}
}

// runLabel names run of runs in a result line ("" for a single run), with
// the solver's seed.
func runLabel(runs, run int, seed uint64) string {
	if runs == 1 {
		return ""
	}
	return fmt.Sprintf(" run %d (Options.Seed %d)", run, seed)
}

// cpuTime is the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// envSeconds is environment variable name's seconds (> 0) as a duration,
// or def when it is unset.
func envSeconds(t *testing.T, name string, def time.Duration) time.Duration {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 {
		t.Fatalf("%s = %q: want seconds > 0", name, s)
	}
	return time.Duration(f * float64(time.Second))
}

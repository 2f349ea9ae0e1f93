package solver

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSuiteRun runs the exact method on the whole robustness suite
// (OPTD_SUITE=1; OPTD_SUITE_LIMIT seconds, default 10) and logs every
// instance: a development harness, not a timed test.
func TestSuiteRun(t *testing.T) {
	if os.Getenv("OPTD_SUITE") == "" {
		t.Skip("set OPTD_SUITE=1 to run the whole suite")
	}
	limit := 10 * time.Second
	if s := os.Getenv("OPTD_SUITE_LIMIT"); s != "" {
		f, _ := strconv.ParseFloat(s, 64)
		limit = time.Duration(f * float64(time.Second))
	}
	only := os.Getenv("OPTD_SUITE_FAMILY")
	seeds := uint64(FamilySeeds)
	if s := os.Getenv("OPTD_SUITE_SEEDS"); s != "" {
		n, _ := strconv.Atoi(s)
		seeds = uint64(n)
	}
	var opts Options
	opts.TimeLimit = limit
	if os.Getenv("OPTD_SUITE_TRACE") != "" {
		last := ""
		opts.Progress = func(p Progress) {
			if p.Phase != last {
				fmt.Printf("    %8.1f ms %-10s inc %v bound %v nodes %d\n", float64(p.Elapsed.Microseconds())/1000, p.Phase, p.Incumbent, p.Bound, p.NodesExplored)
				last = p.Phase
			}
		}
		opts.ProgressInterval = time.Hour
	}
	var times []float64
	proven := 0
	for _, f := range Families() {
		if only != "" && f.Name != only {
			continue
		}
		for seed := range seeds {
			in := f.Instance(seed)
			r, err := Exact(context.Background(), in, opts)
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, r.ElapsedMS)
			if r.Optimal {
				proven++
			}
			fmt.Printf("%-16s %d optimal=%-5v %9.1f ms obj=%v ub=%v nodes=%d lp=%d stop=%s\n", f.Name, seed, r.Optimal, r.ElapsedMS, r.Objective, r.UpperBound, r.Stats.NodesExplored, r.Stats.LPSolves, r.Stats.Stopped)
		}
	}
	sort.Float64s(times)
	fmt.Printf("proven %d of %d; median %.1f ms, max %.1f ms\n", proven, len(times), times[len(times)/2], times[len(times)-1])
}

// TestSuiteCBC runs CBC on the instances named in OPTD_SUITE_CBC
// ("family:seed,..."), a development harness for the optima.
func TestSuiteCBC(t *testing.T) {
	list := os.Getenv("OPTD_SUITE_CBC")
	if list == "" {
		t.Skip("set OPTD_SUITE_CBC")
	}
	limit := 30 * time.Second
	dir := t.TempDir()
	for _, item := range strings.Split(list, ",") {
		fam, sd, _ := strings.Cut(item, ":")
		seed, _ := strconv.Atoi(sd)
		in, err := FamilyInstance(fam, uint64(seed))
		if err != nil {
			t.Fatal(err)
		}
		cb, err := runCBC(context.Background(), dir, fmt.Sprintf("%s-%d", fam, seed), in, limit)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("cbc %s %d: %v %s %v\n", fam, seed, cb.objective, cb.status, cb.elapsed)
	}
}

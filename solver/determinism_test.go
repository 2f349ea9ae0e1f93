package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestSameSeedSamePathUnderLoad: the exact method's path depends on the
// instance and Options.Seed only (the work clock counts operations, see
// workClock), not on the load: each instance is solved once alone and
// once beside goroutines that burn every CPU and force garbage
// collections, and the two answers must agree in everything but time:
// the assignment, objective, bound, optimality, node and LP-solve counts,
// and the work clock's counts of every kind. Instances: a few of the
// robustness suite that go through the phases the clock budgets (LNS, DP
// steps, dives, branch and price, integer master) and small random ones,
// with no time limit (the budgets' caps) and with a long one (shares of
// planHorizon's work, and the branch and price's rounds); in -short mode
// and under the race detector one suite instance. A solve the time limit stopped (a machine slower than any
// seen) is not compared: that is where the path may differ.
func TestSameSeedSamePathUnderLoad(t *testing.T) {
	jobs := suiteInstances("hetero-3r-2", "many-resources-1", "yarn-0", "huge-small-1")
	if testing.Short() || raceEnabled {
		jobs = suiteInstances("hetero-3r-2")
	}
	jobs = append(jobs, smallRandomInstances(t)...)
	type outcome struct {
		res    *Result
		counts [numWorkKinds]int64
	}
	solve := func(in *Instance, opts Options) outcome {
		var o outcome
		ctx := withWorkReport(context.Background(), func(counts [numWorkKinds]int64, _ time.Duration) { o.counts = counts })
		r, err := Exact(ctx, in, opts)
		if err != nil {
			t.Fatal(err)
		}
		o.res = r
		return o
	}
	loaded := func(in *Instance, opts Options) outcome {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for g := range runtime.GOMAXPROCS(0) + 1 {
			wg.Go(func() {
				var junk [][]byte
				for x := uint64(g); ; x = x*6364136223846793005 + 1 {
					select {
					case <-stop:
						return
					default:
					}
					junk = append(junk, make([]byte, 1<<10+x%(1<<12)))
					if len(junk) > 1<<10 {
						junk = junk[:0]
						runtime.GC()
					}
				}
			})
		}
		defer wg.Wait()
		defer close(stop)
		return solve(in, opts)
	}
	compared, byWork := 0, 0
	for _, j := range jobs {
		// no limit, a long time limit, and a work limit that stops the
		// suite's instances partway (Options.WorkLimit: the answer at it
		// is as deterministic as a finished solve's)
		for _, opts := range []Options{{Seed: 3}, {TimeLimit: 10 * time.Minute, Seed: 3}, {WorkLimit: 5 * time.Millisecond, Seed: 3}} {
			limit := fmt.Sprintf("time limit %v, work limit %v", opts.TimeLimit, opts.WorkLimit)
			a := solve(j.in, opts)
			b := loaded(j.in, opts)
			if a.res.Stats.Stopped == StopTimeLimit || b.res.Stats.Stopped == StopTimeLimit {
				t.Logf("%s, %s: stopped by the time limit, not compared", j.name, limit)
				continue
			}
			compared++
			if a.res.Stats.Stopped == StopWorkLimit {
				byWork++
				if w := time.Duration(a.res.Stats.WorkMS * 1e6); w < opts.WorkLimit {
					t.Errorf("%s, %s: stopped by the work limit after %v of work", j.name, limit, w)
				}
			}
			if opts.WorkLimit > 0 {
				t.Logf("%s, %s: stopped %q, work %.3f ms, objective %v, bound %v", j.name, limit, a.res.Stats.Stopped, a.res.Stats.WorkMS, a.res.Objective, a.res.UpperBound)
			}
			if a.counts != b.counts || a.res.Stats != b.res.Stats || a.res.Objective != b.res.Objective ||
				a.res.UpperBound != b.res.UpperBound || a.res.Optimal != b.res.Optimal || !reflect.DeepEqual(a.res.Assignment, b.res.Assignment) {
				t.Errorf("%s, limit %v: alone %v (bound %v, optimal %v, %+v, work %v), loaded %v (bound %v, optimal %v, %+v, work %v)",
					j.name, limit, a.res.Objective, a.res.UpperBound, a.res.Optimal, a.res.Stats, a.counts,
					b.res.Objective, b.res.UpperBound, b.res.Optimal, b.res.Stats, b.counts)
			}
			if a.counts == ([numWorkKinds]int64{}) {
				t.Errorf("%s, limit %v: no work counted", j.name, limit)
			}
		}
	}
	if compared == 0 {
		t.Fatal("no solve compared: every one stopped at its time limit")
	}
	if byWork == 0 {
		t.Error("no solve stopped at its work limit: the limit's determinism was not tested")
	}
}

// TestLongLimitsTakeOnePath: the phases' shares are reckoned on at most
// planHorizon of the work left, so a solve that ends well within two long
// time limits takes the same path under both, and a long limit does not
// make every phase longer: a 1-minute and a 10-minute limit must give the
// same answer and the same counts of work. Instances: the small random ones
// of TestSameSeedSamePathUnderLoad (one of which, with a share of all the
// work left, took 16 s of work under the first and 152 s under the
// second) and, outside -short and the race detector, a few of the suite
// that reach the branch and price.
func TestLongLimitsTakeOnePath(t *testing.T) {
	jobs := smallRandomInstances(t)
	if !testing.Short() && !raceEnabled {
		jobs = append(jobs, suiteInstances("hetero-3r-2", "identical-9", "live-cluster-3")...)
	}
	compared := 0
	for _, j := range jobs {
		var runs [2]struct {
			res    *Result
			counts [numWorkKinds]int64
		}
		for k, limit := range []time.Duration{time.Minute, 10 * time.Minute} {
			ctx := withWorkReport(context.Background(), func(c [numWorkKinds]int64, _ time.Duration) { runs[k].counts = c })
			r, err := Exact(ctx, j.in, Options{TimeLimit: limit, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			runs[k].res = r
		}
		a, b := runs[0], runs[1]
		if a.res.Stats.Stopped == StopTimeLimit {
			// a machine slower than any seen: the wall clock bound first
			t.Logf("%s: stopped by the 1-minute limit after %.0f ms of work, not compared", j.name, a.res.Stats.WorkMS)
			continue
		}
		compared++
		if a.counts != b.counts || a.res.Stats != b.res.Stats || a.res.Objective != b.res.Objective || !reflect.DeepEqual(a.res.Assignment, b.res.Assignment) {
			t.Errorf("%s: under a 1-minute limit %v (%+v, work %v), under a 10-minute limit %v (%+v, work %v)",
				j.name, a.res.Objective, a.res.Stats, a.counts, b.res.Objective, b.res.Stats, b.counts)
		}
		if !a.res.Optimal {
			t.Errorf("%s: not proven under a 1-minute limit (stopped %q)", j.name, a.res.Stats.Stopped)
		}
	}
	if compared == 0 {
		t.Fatal("no solve compared: every one stopped at the 1-minute limit")
	}
}

// namedInstance is an instance of a test, with the name it reports.
type namedInstance struct {
	name string
	in   *Instance
}

// suiteInstances returns the robustness suite's instances of these names
// ("family-seed").
func suiteInstances(names ...string) []namedInstance {
	var out []namedInstance
	for _, f := range Families() {
		for seed := range uint64(FamilySeeds) {
			if name := fmt.Sprintf("%s-%d", f.Name, seed); slices.Contains(names, name) {
				out = append(out, namedInstance{name, f.Instance(seed)})
			}
		}
	}
	return out
}

// smallRandomInstances returns six small random instances (6-16 nodes,
// 5-10 types, 2-3 resources), the same in every run.
func smallRandomInstances(t *testing.T) []namedInstance {
	var out []namedInstance
	rng := rand.New(rand.NewPCG(21, 4))
	for i := range 6 {
		in, err := RandomInstance(rng, RandomSpec{Nodes: 6 + 2*i, Types: 5 + i, Resources: 2 + i%2})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, namedInstance{fmt.Sprintf("random-%d", i), in})
	}
	return out
}

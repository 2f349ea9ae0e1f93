package solver

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// hardSpec is the family of hard instances of the benchmark: 40-50
// heterogeneous nodes, 8-10 task types, 3 resources, more tasks than fit.
func hardSpec(rng *rand.Rand) RandomSpec {
	return RandomSpec{
		Nodes:     40 + rng.IntN(11),
		Types:     8 + rng.IntN(3),
		Resources: 3,
		CapMin:    16, CapMax: 48,
		DemandMaxFrac: 0.5,
		Supply:        1.5,
	}
}

// hardInstance returns hard instance number i of the comparison suite.
func hardInstance(i int) *Instance {
	rng := rand.New(rand.NewPCG(uint64(i), 0x4a7d))
	in, err := RandomInstance(rng, hardSpec(rng))
	if err != nil {
		panic(err)
	}
	return in
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// TestCBCCompare is the side-by-side harness of the benchmark
// (heavy; runs only with OPTD_CBC_COMPARE=1):
//
//	OPTD_CBC_COMPARE=1 [OPTD_CBC_N=10] [OPTD_CBC_LIMIT_S=60] go test -run CBCCompare -v ./solver/
//
// For each hard instance it solves exact (time limit = the same limit) and
// `cbc -threads 1 -sec LIMIT` on the same model in the same run, and logs
// both times, the ratio and whether both proved optimality with equal
// objectives. It fails if the two proven optima differ or if exact's
// objective is below a CBC solution.
func TestCBCCompare(t *testing.T) {
	if os.Getenv("OPTD_CBC_COMPARE") != "1" {
		t.Skip("set OPTD_CBC_COMPARE=1 to run the CBC comparison (heavy)")
	}
	n := envInt("OPTD_CBC_N", 10)
	limit := time.Duration(envInt("OPTD_CBC_LIMIT_S", 60)) * time.Second
	first := envInt("OPTD_CBC_FIRST", 0)
	dir := t.TempDir()
	var totalExact, totalCBC time.Duration
	t.Logf("%-8s %5s %5s %10s %10s %7s %10s %10s %8s %s", "instance", "nodes", "types", "exact_obj", "exact_ms", "proven", "cbc_obj", "cbc_ms", "ratio", "cbc_status")
	for i := first; i < first+n; i++ {
		in := hardInstance(i)
		ex, err := Exact(context.Background(), in, Options{TimeLimit: limit})
		if err != nil {
			t.Fatal(err)
		}
		checkFeasible(t, in, ex)
		cb, err := runCBC(context.Background(), dir, fmt.Sprintf("hard%d", i), in, limit)
		if err == errNoCBC {
			t.Skip("cbc is not on PATH (Debian package coinor-cbc)")
		}
		if err != nil {
			t.Fatal(err)
		}
		exMS := time.Duration(ex.ElapsedMS * float64(time.Millisecond))
		totalExact += exMS
		totalCBC += cb.elapsed
		t.Logf("hard%-4d %5d %5d %10g %10.1f %7v %10g %10.1f %8.1f %s (exact nodes %d, lp %d)", i, len(in.Nodes), len(in.Tasks),
			ex.Objective, ex.ElapsedMS, ex.Optimal, cb.objective, float64(cb.elapsed.Microseconds())/1000,
			float64(cb.elapsed)/float64(exMS), cb.status, ex.Stats.NodesExplored, ex.Stats.LPSolves)
		if cb.refutedBy(ex) {
			t.Logf("hard%d: cbc claimed %v optimal, below exact's checked %v", i, cb.objective, ex.Objective)
		} else if ex.Optimal && cb.optimal && ex.Objective != cb.objective {
			t.Errorf("hard%d: proven optima differ: exact %v, cbc %v", i, ex.Objective, cb.objective)
		}
		if cb.objective > ex.UpperBound {
			t.Errorf("hard%d: cbc solution %v above exact's bound %v", i, cb.objective, ex.UpperBound)
		}
	}
	t.Logf("total: exact %.1f ms, cbc %.1f ms, ratio %.1f", float64(totalExact.Microseconds())/1000,
		float64(totalCBC.Microseconds())/1000, float64(totalCBC)/float64(totalExact))
}

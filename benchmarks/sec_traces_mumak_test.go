package benchmarks

import (
	"context"
	"testing"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/sim"
)

// The Mumak scenario keeps the trace's recorded works, draws the others
// from the median recorded work of their type, and its bound holds on a
// run (a small prefix of the trace, to stay fast).
func TestMumakScenario(t *testing.T) {
	file := testenv.SharedFile(t, mumakTrace)
	sc, err := mumakScenario(file, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Jobs) != 3 {
		t.Fatalf("%d jobs, want the first 3", len(sc.Jobs))
	}
	var maps []float64
	for _, j := range sc.Jobs {
		if j.MapWorks == nil {
			t.Fatalf("job %s: the first jobs of the trace record every map's work", j.ID)
		}
		maps = append(maps, j.MapWorks...)
	}
	if got, want := sc.Jobs[0].MapWork.Mean(), median(maps); got != want {
		t.Fatalf("map work law mean %g, want the median recorded map work %g", got, want)
	}
	r, err := hbRun(context.Background(), sc, "fair", 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := sim.ClusterLowerBound(sc, sim.ClusterBoundOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !(b.MakespanS > 0 && b.MakespanS <= r.MakespanS && b.MeanResponseS > 0 && b.MeanResponseS <= r.MeanResponseS) {
		t.Fatalf("bound %+v vs run makespan %g, mean response %g", b, r.MakespanS, r.MeanResponseS)
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.xs, got, c.want)
		}
	}
}

package benchmarks

import (
	"context"
	"slices"
	"testing"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/models/trace"
	"github.com/optd/optd/sim"
)

// The Mumak scenario keeps the trace's recorded works and draws the others
// from the median successful attempt of their type in their job; its bound
// holds on a run of the first jobs (a small prefix, to stay fast).
func TestMumakScenario(t *testing.T) {
	file := testenv.TraceFile(t, mumakTrace)
	whole, err := mumakScenario(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := trace.ReadFile(file, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	own := map[string][]float64{}
	for _, j := range recorded {
		own[j.ID], _ = sim.AttemptWorks(j.Attempts)
	}
	drawn := 0
	for _, j := range whole.Jobs {
		if j.MapWorks != nil || len(own[j.ID]) == 0 {
			continue
		}
		drawn++
		if got, want := j.MapWork.Mean(), median(own[j.ID]); got != want {
			t.Errorf("job %s: map work law mean %g, want its median successful map %g", j.ID, got, want)
		}
	}
	if drawn == 0 {
		t.Fatal("no job draws its map works: the test checks nothing")
	}
	sc, err := mumakScenario(file, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Jobs) != 3 {
		t.Fatalf("%d jobs, want the first 3", len(sc.Jobs))
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

func TestIdenticalRuns(t *testing.T) {
	run := func(m, r float64) *mumakRuns { return &mumakRuns{makespan: []float64{m, 1}, response: []float64{r, 1}} }
	runs := map[string]*mumakRuns{"a": run(1, 2), "b": run(3, 4), "c": run(1, 2), "d": run(3, 5), "e": run(3, 4)}
	got := identicalRuns([]string{"a", "b", "c", "d", "e"}, runs)
	if want := []string{"a = c", "b = e"}; !slices.Equal(got, want) {
		t.Fatalf("identicalRuns = %q, want %q", got, want)
	}
}

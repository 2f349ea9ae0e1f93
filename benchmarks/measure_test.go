package benchmarks

import (
	"context"
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	calls := 0
	r, err := Measure(context.Background(), "X/size=1", time.Hour, 5, func(context.Context) ([]Metric, error) {
		calls++
		return []Metric{{Value: 10, Unit: "events/s", Rate: true}, {Value: float64(calls), Unit: "calls"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.N != 5 || calls != 5 {
		t.Fatalf("N = %d, calls = %d, want 5 (maxN)", r.N, calls)
	}
	if v, _ := r.Metric("calls"); v != 5 {
		t.Errorf("calls metric = %v, want the last run's 5", v)
	}
	ev, _ := r.Metric("events/s")
	if want := 50 / (r.NsPerOp * 5 / 1e9); ev < want*0.999 || ev > want*1.001 {
		t.Errorf("events/s = %v, want %v (50 events over the total time)", ev, want)
	}
	line := r.Line(2)
	if !regexp.MustCompile(`^BenchmarkX/size=1-2\t5\t\d+ ns/op\t\S+ events/s\t5 calls$`).MatchString(line) {
		t.Errorf("line %q is not in the go test -bench format", line)
	}
	// At least one run even with minTime 0; errors stop the loop.
	boom := errors.New("boom")
	if _, err := Measure(context.Background(), "E", 0, 1, func(context.Context) ([]Metric, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
}

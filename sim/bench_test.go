package sim

import (
	"context"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
)

// BenchmarkFig9 simulates one replication of the paper's Fig. 9 setting
// (1000 slots, K = 100, ρ = 0.6, 50,000 jobs) under one policy and reports
// the engine's throughput in events per second.
func BenchmarkFig9(b *testing.B) {
	s, err := LoadScenario("testdata/scenarios/fig9-rho0.6.json")
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{placement.NameGreedy, placement.NameRecedingHorizon, placement.NameRandom} {
		b.Run("policy="+name+"/slots=1000/jobs=50000", func(b *testing.B) {
			b.ReportAllocs()
			var events uint64
			for b.Loop() {
				p, err := policy.NewPlacement(name, policy.PlacementConfig{Seed: 1})
				if err != nil {
					b.Fatal(err)
				}
				res, err := s.Model().Run(context.Background(), s.Source(0), p, RunOptions{Warmup: s.WarmupJobs})
				if err != nil {
					b.Fatal(err)
				}
				events += res.Events
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkEngine measures the engine alone: a steady queue of n pending
// events, each step scheduling one new event.
func BenchmarkEngine(b *testing.B) {
	for _, n := range []int{2, 1000} {
		b.Run("pending="+itoa(n), func(b *testing.B) {
			b.ReportAllocs()
			e := NewEngine()
			for i := range n {
				e.Schedule(float64(i), 0, i)
			}
			for b.Loop() {
				ev, _ := e.Step()
				e.Schedule(ev.Time+float64(n), 0, ev.Arg)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

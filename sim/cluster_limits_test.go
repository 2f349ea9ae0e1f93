package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/optd/optd/policy"
)

// limitsDoc is a two-rack slot cluster with a network and two jobs; %s
// takes extra top-level keys (with a leading comma) and the network's
// keys.
const limitsDoc = `{"cluster": {"nodes": [{"id": "a", "rack": "r", "map_slots": 2, "reduce_slots": 1},
	{"id": "b", "rack": "s", "map_slots": 2, "reduce_slots": 1}]}%s,
	"network": {%s},
	"jobs": [{"id": "j1", "maps": 4, "reduces": 2, "map_works": [5, 6, 7, 8], "reduce_works": [9, 9], "map_output_mb": 64},
		{"id": "j2", "submit_s": %g, "maps": 2, "reduces": 1, "map_work": {"kind": "exponential", "mean": %g}, "reduce_works": [4], "map_output_mb": 32}]}`

func limitsScenario(extra, network string, submit, mapMean float64) string {
	return fmt.Sprintf(limitsDoc, extra, network, submit, mapMean)
}

// TestAbsurdValuesRefused: the values that made a run never end (links of
// 10⁻³⁰⁰ MB/s, uplinks 10³⁰⁸:1, heartbeats every nanosecond) are refused
// with the field, the value and the limit.
func TestAbsurdValuesRefused(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"node link", limitsScenario("", `"node_mbps": 1e-300`, 1, 5), "network.node_mbps = 1e-300: must be 0 (125) or in [0.1, 1e+12] MB/s"},
		{"node link too fast", limitsScenario("", `"node_mbps": 1e300`, 1, 5), "network.node_mbps = 1e+300"},
		{"uplinks", limitsScenario("", `"oversubscription": 1e308`, 1, 5), "network.oversubscription = 1e+308: must be 0 (1) or in [1, 1000]"},
		{"a rack's uplink", limitsScenario("", `"rack_oversubscription": {"s": 1e308}`, 1, 5), `network.rack_oversubscription["s"] = 1e+308: must be in [1, 1000]`},
		{"heartbeats", limitsScenario(`, "heartbeat_s": 1e-9`, "", 1, 5), "heartbeat_s = 1e-09: must be 0 (default) or in [0.01, 86400] s"},
		{"samples", limitsScenario(`, "sample_s": 1e-300`, "", 1, 5), "sample_s = 1e-300"},
		{"time limit", limitsScenario(`, "max_simulated_s": -1`, "", 1, 5), "max_simulated_s = -1"},
		{"submitted after the time limit", limitsScenario(`, "max_simulated_s": 100`, "", 200, 5), "jobs[1].submit_s = 200: after max_simulated_s = 100 s"},
		{"submitted after the default time limit", limitsScenario("", "", 2e7, 5), "jobs[1].submit_s = 2e+07: after max_simulated_s = 1e+07 s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeClusterScenario(strings.NewReader(c.doc), ".")
			if !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalidScenario saying %q", err, c.want)
			}
		})
	}
}

// TestRunLimits: a run stops at its max_events or max_simulated_s with the
// limit named; the slowest links within the limits end under the
// defaults.
func TestRunLimits(t *testing.T) {
	run := func(doc string) (*ClusterResult, error) {
		sc, err := DecodeClusterScenario(strings.NewReader(doc), ".")
		if err != nil {
			t.Fatal(err)
		}
		pipe, err := policy.NewPipeline("fair", policy.HeartbeatConfig{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: 1})
	}
	base, err := run(limitsScenario("", `"node_mbps": 10`, 1, 5))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, extra, network, want string }{
		{"events", fmt.Sprintf(`, "max_events": %d`, base.Events/2), `"node_mbps": 10`, fmt.Sprintf("max_events = %d processed", base.Events/2)},
		{"clock", fmt.Sprintf(`, "max_simulated_s": %g`, base.MakespanS/2), `"node_mbps": 10`, fmt.Sprintf("the clock passed max_simulated_s = %.6g s with", base.MakespanS/2)},
	} {
		_, err := run(limitsScenario(c.extra, c.network, 1, 5))
		if !errors.Is(err, ErrRunLimit) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrRunLimit saying %q", c.name, err, c.want)
		}
	}
	// The slowest links the limits allow (0.1 MB/s) still end under the
	// default limits, later.
	slow, err := run(limitsScenario("", `"node_mbps": 0.1`, 1, 5))
	if err != nil {
		t.Fatalf("slowest network: %v", err)
	}
	if !(slow.MakespanS > base.MakespanS) {
		t.Errorf("slowest network: makespan %v, not above %v at 10 MB/s", slow.MakespanS, base.MakespanS)
	}
}

// FuzzClusterRunEnds: whatever the network's speeds, the heartbeat and
// sampling intervals and the works, a scenario is refused or its run ends
// (a result, or a run limit at a small max_events), never hangs or panics.
func FuzzClusterRunEnds(f *testing.F) {
	f.Add(125.0, 1.0, 5.0, 1.0, 1.0, 1.0)
	f.Add(1e-300, 1e308, 1e300, 1e-9, 1e-300, 1e300)
	f.Add(0.1, 1000.0, 1e9, 0.01, 0.01, 1e-300)
	f.Add(1e12, 1.0, 1e-9, 86400.0, 86400.0, 5e6)
	f.Fuzz(func(t *testing.T, mbps, over, mapMean, hb, sample, submit float64) {
		for _, v := range []*float64{&mbps, &over, &mapMean, &hb, &sample, &submit} {
			if math.IsNaN(*v) || math.IsInf(*v, 0) {
				*v = 1 // not JSON numbers
			}
		}
		doc := limitsScenario(fmt.Sprintf(`, "heartbeat_s": %g, "sample_s": %g, "max_events": 20000`, hb, sample),
			fmt.Sprintf(`"node_mbps": %g, "oversubscription": %g`, mbps, over), submit, mapMean)
		sc, err := DecodeClusterScenario(strings.NewReader(doc), ".")
		if err != nil {
			if !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("error %v does not wrap ErrInvalidScenario", err)
			}
			return
		}
		pipe, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		res, err := RunCluster(context.Background(), sc, pipe, ClusterOptions{Seed: 1})
		switch {
		case errors.Is(err, ErrRunLimit):
		case err != nil:
			t.Fatalf("run: %v", err)
		case len(res.Jobs) != 2 || res.Events > 20000:
			t.Fatalf("%d jobs, %d events", len(res.Jobs), res.Events)
		}
	})
}

package sim

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/optd/optd/internal/testenv"
)

func TestLoadClusterScenario(t *testing.T) {
	sc, err := LoadClusterScenario("testdata/cluster-small.json")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Name != "small" || len(sc.Jobs) != 2 || sc.Jobs[1].Stages != 2 || sc.Jobs[0].MapSkew.Factor != 3 || sc.Stragglers[0].Speed != 0.5 {
		t.Fatalf("decoded %+v", sc)
	}
	r := runCluster(t, sc, "drf", 1)
	if len(r.Jobs) != 2 {
		t.Fatalf("%d jobs", len(r.Jobs))
	}
}

func TestDecodeClusterScenarioErrors(t *testing.T) {
	base := `{"cluster": {"resources": ["memory_mb","vcores"], "nodes": [{"id": "n1", "rack": "r", "capacity": [4096, 4]}]}, "jobs": [%s]}`
	job := `{"id": "j", "maps": 1, "map_works": [1], "demand": {"map": [1024, 1]}}`
	for _, c := range []struct{ name, doc, want string }{
		{"unknown field", `{"cluster": {"nodes": []}, "nope": 1}`, "nope"},
		{"no cluster", `{"jobs": []}`, "cluster"},
		{"trailing", strings.Replace(base, "%s", job, 1) + `{}`, "trailing"},
		{"bad law", strings.Replace(base, "%s", `{"id": "j", "maps": 1, "map_work": {"kind": "uniform", "min": 5, "max": 1}}`, 1), "jobs[0].map_work"},
		{"bad type", strings.Replace(base, "%s", `{"id": "j", "maps": 1, "map_works": [1], "demand": {"mop": [1, 1]}}`, 1), "mop"},
		{"skew field", strings.Replace(base, "%s", `{"id": "j", "maps": 1, "map_works": [1], "map_skew": {"frac": 1}}`, 1), "frac"},
		{"too large", strings.Replace(base, "%s", `{"id": "j", "maps": 1, "map_works": [1], "demand": {"map": [8192, 1]}}`, 1), "no node can run"},
		{"rack uplink of no rack", strings.Replace(base, "%s", job, 1)[:len(base)-len(`, "jobs": [%s]}`)] + `, "network": {"rack_oversubscription": {"q": 2}}, "jobs": [` + job + `]}`, `network.rack_oversubscription["q"]`},
		{"rack uplink below 1", strings.Replace(base, "%s", job, 1)[:len(base)-len(`, "jobs": [%s]}`)] + `, "network": {"rack_oversubscription": {"r": 0.5}}, "jobs": [` + job + `]}`, `network.rack_oversubscription["r"]`},
		{"trace missing", `{"cluster": {"nodes": [{"id": "n1", "rack": "r", "map_slots": 1}]}, "trace": {"file": "nope.csv"}}`, "trace.file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeClusterScenario(strings.NewReader(c.doc), ".")
			if !errors.Is(err, ErrInvalidScenario) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInvalidScenario mentioning %q", err, c.want)
			}
		})
	}
}

// TestClusterScenarioFromMumak replays the first jobs of the Mumak trace
// with their attempt durations as task works.
func TestClusterScenarioFromMumak(t *testing.T) {
	file := testenv.TraceFile(t, "hadoop-mumak/19-jobs.attempts.csv")
	doc := `{"cluster": {"resources": ["memory_mb","vcores"], "nodes": [` +
		`{"id": "n1", "rack": "r1", "capacity": [16384, 16]}, {"id": "n2", "rack": "r1", "capacity": [16384, 16]},` +
		`{"id": "n3", "rack": "r2", "capacity": [16384, 16]}, {"id": "n4", "rack": "r2", "capacity": [16384, 16]}]},` +
		`"trace": {"file": "` + file + `", "max_jobs": 3, "demand": {"map": [1024, 1], "reduce": [1024, 1]},` +
		`"map_work": {"kind": "exponential", "mean": 30}, "reduce_work": {"kind": "exponential", "mean": 60}}}`
	sc, err := DecodeClusterScenario(strings.NewReader(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Jobs) != 3 {
		t.Fatalf("%d jobs", len(sc.Jobs))
	}
	withWorks := 0
	for _, j := range sc.Jobs {
		if j.MapWorks != nil {
			withWorks++
		}
	}
	if withWorks == 0 {
		t.Errorf("no job took its map works from the trace attempts")
	}
	runCluster(t, sc, "fair", 1)
}

func FuzzDecodeClusterScenario(f *testing.F) {
	data, err := os.ReadFile("testdata/cluster-small.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"cluster": {"nodes": [{"id": "a", "rack": "r", "map_slots": 2, "reduce_slots": 1}]}, "jobs": [{"id": "j", "maps": 2, "reduces": 1, "map_works": [1, 2], "reduce_works": [3]}]}`))
	f.Add([]byte(`{"cluster": {"nodes": [{"id": "a", "rack": "r", "map_slots": 2, "reduce_slots": 1}]}, "network": {"node_mbps": 10, "oversubscription": 4}, "jobs": [{"id": "j", "maps": 2, "reduces": 1, "map_works": [1, 2], "reduce_works": [3], "map_output_mb": 64}]}`))
	f.Add([]byte(`{"cluster": {"nodes": [{"id": "a", "rack": "r", "map_slots": 2, "reduce_slots": 1}]}, "network": {}, "jobs": [{"id": "j", "maps": 2, "reduces": 1, "map_works": [1, 2], "reduce_works": [3], "input_racks": ["r", "s"]}]}`))
	f.Add([]byte(`{"cluster": {"nodes": [{"id": "a", "rack": "r", "map_slots": 2, "reduce_slots": 1}, {"id": "b", "rack": "s", "map_slots": 2, "reduce_slots": 1}]}, "network": {"oversubscription": 10, "rack_oversubscription": {"s": 1}}, "jobs": [{"id": "j", "maps": 2, "reduces": 1, "map_works": [1, 2], "reduce_works": [3]}]}`))
	f.Add([]byte(`{"cluster": {"nodes": []}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		sc, err := DecodeClusterScenario(strings.NewReader(string(doc)), "testdata")
		if err != nil {
			if !errors.Is(err, ErrInvalidScenario) {
				t.Fatalf("error %v does not wrap ErrInvalidScenario", err)
			}
			return
		}
		if err := sc.withDefaults().Validate(); err != nil {
			t.Fatalf("decoded scenario does not validate: %v", err)
		}
	})
}

// TestDecodeRackOversubscription: a rack's own uplink ratio is decoded and
// used: a fetch across racks into a 1:1 rack of a 10:1 cluster, from a
// 1:1 rack, runs at the node link's rate, and 10 times slower without the
// override.
func TestDecodeRackOversubscription(t *testing.T) {
	doc := `{"cluster": {"nodes": [{"id": "a", "rack": "r", "map_slots": 1, "reduce_slots": 1}, {"id": "b", "rack": "s", "map_slots": 1, "reduce_slots": 1}]},
	  "replicas": 1, "slow_start": 1, "network": {"node_mbps": 100, "oversubscription": 10%s},
	  "jobs": [{"id": "j", "maps": 1, "reduces": 1, "map_works": [1], "reduce_works": [0.001], "map_output_mb": 1000, "input_racks": ["r"]}]}`
	var shuffle [2]float64
	for k, over := range []string{`, "rack_oversubscription": {"r": 1, "s": 1}`, ""} {
		sc, err := DecodeClusterScenario(strings.NewReader(fmt.Sprintf(doc, over)), ".")
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 && (sc.Network.RackOversubscription["r"] != 1 || sc.Network.RackOversubscription["s"] != 1) {
			t.Fatalf("decoded %+v", sc.Network)
		}
		r := runCluster(t, sc, "fifo", 1)
		shuffle[k] = r.MakespanS
	}
	if !(shuffle[1] > 5*shuffle[0]) {
		t.Fatalf("makespan %v s with 1:1 racks, %v s at 10:1: want the 10:1 run several times slower", shuffle[0], shuffle[1])
	}
}

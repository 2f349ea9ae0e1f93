package placement

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/policytest"
)

// linkCluster is two racks of two nodes; rates[node] is the fetch rate a
// running reducer of another job reports there (none where absent).
func linkCluster(rates map[string]float64) (*policy.ClusterView, *policy.JobView) {
	f := policytest.NewFixture(10, true, nil)
	for _, id := range []string{"a0", "a1", "b0", "b1"} {
		f.Node(id, "rack-"+id[:1], 2, 2, nil)
	}
	other := f.Job("other", 0, 0, nil)
	for _, id := range []string{"a0", "a1", "b0", "b1"} {
		if r, ok := rates[id]; ok {
			f.Run(other, models.ReduceTask, f.NodeByID(id), 0, 0.1).FetchMBps = r
		}
	}
	j := f.Job("j", 0, 1, nil)
	j.MapsTotal, j.MapsDone = 40, 4
	j.MapOutputs = []policy.NodeOutput{{Node: "a0", Maps: 2, MB: 200}, {Node: "b0", Maps: 2, MB: 200}}
	return f.Finish(), j
}

// TestLinkEstimateByHand: the smoothed estimates and κ follow their
// definitions on a sequence of observations: the first sets them, later
// ones move them halfway, a rack seen idle moves toward one link, a rack
// never seen has κ = 1, and κ never exceeds the rack's node count.
func TestLinkEstimateByHand(t *testing.T) {
	var e linkEstimate
	c, _ := linkCluster(nil)
	e.observe(c)
	if e.LinkMBps != 0 || e.kappa("rack-a", 2) != 1 {
		t.Fatalf("nothing fetching: %+v, κ = %v", e, e.kappa("rack-a", 2))
	}
	c, _ = linkCluster(map[string]float64{"a0": 10, "a1": 20, "b0": 40})
	e.observe(c)
	if e.LinkMBps != 40 || e.RackMBps["rack-a"] != 30 || e.RackMBps["rack-b"] != 40 || e.kappa("rack-a", 2) != 0.75 {
		t.Fatalf("first observation: %+v, κ(a) = %v", e, e.kappa("rack-a", 2))
	}
	c, _ = linkCluster(map[string]float64{"b0": 100, "b1": 100})
	e.observe(c)
	// link: (40+100)/2 = 70; rack-b: (40+200)/2 = 120; rack-a idle: (30+70)/2 = 50.
	if e.LinkMBps != 70 || e.RackMBps["rack-b"] != 120 || e.RackMBps["rack-a"] != 50 {
		t.Fatalf("second observation: %+v", e)
	}
	if k := e.kappa("rack-b", 2); k != 120.0/70 {
		t.Fatalf("κ(b) = %v, want 120/70", k)
	}
	if k := e.kappa("rack-b", 1); k != 1 {
		t.Fatalf("κ(b) with 1 node = %v, want the cap 1", k)
	}
	if k := e.kappa("rack-c", 3); k != 1 {
		t.Fatalf("κ of a rack never seen = %v, want 1", k)
	}
}

// TestLearnedCongestionMovesReducers: greedy places a one-reducer job
// whose outputs are split alike between two racks in the first rack (its
// spread order) while nothing is learned, and in the other once the first
// rack's reducers were seen fetching at a fraction of what the other's get,
// over random rates; the reason names the learned κ. With fixed fetch
// costs (HeartbeatConfig.FixedFetchCosts) the same rates leave it in the
// first rack, κ = 1 everywhere.
func TestLearnedCongestionMovesReducers(t *testing.T) {
	fixed := false
	place := func(rates map[string]float64) (string, string) {
		c, j := linkCluster(rates)
		pipe, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Placement: Greedy{}, FixedFetchCosts: fixed})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range c.Nodes {
			for _, a := range pipe.Heartbeat(c, n).Actions {
				if a.Kind == policy.ActionStart && a.Job == j.ID {
					return n.ID, a.Reason
				}
			}
		}
		return "", ""
	}
	alike := map[string]float64{"a0": 50, "b0": 50}
	if n, _ := place(alike); !strings.HasPrefix(n, "a") {
		t.Fatalf("racks seen alike: reducer on %s, want rack a (spread order)", n)
	}
	rng := rand.New(rand.NewPCG(5, 5))
	for range 50 {
		fast := 20 + 200*rng.Float64()
		slow := fast * (0.05 + 0.4*rng.Float64())
		n, reason := place(map[string]float64{"a0": slow, "b0": fast})
		if !strings.HasPrefix(n, "b") {
			t.Fatalf("rack a seen at %.3g MB/s, rack b at %.3g: reducer on %s (%s)", slow, fast, n, reason)
		}
		if want := fmt.Sprintf("κ(rack-b) = %.3g", 1.0); !strings.Contains(reason, want) {
			t.Fatalf("reason %q lacks %q", reason, want)
		}
		fixed = true
		n, reason = place(map[string]float64{"a0": slow, "b0": fast})
		fixed = false
		if !strings.HasPrefix(n, "a") || !strings.Contains(reason, "κ(rack-a) = 1") {
			t.Fatalf("fixed fetch costs, rack a seen at %.3g MB/s, rack b at %.3g: reducer on %s (%s), want rack a at κ = 1", slow, fast, n, reason)
		}
	}
}

// TestLinkEstimateSnapshot: the estimates survive a snapshot, and damaged
// ones are refused with the field named.
func TestLinkEstimateSnapshot(t *testing.T) {
	c, _ := linkCluster(map[string]float64{"a0": 10, "b0": 40})
	pipe := func() *policy.Pipeline {
		p, err := policy.NewPipeline("fifo", policy.HeartbeatConfig{Placement: Greedy{}})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := pipe()
	a.Heartbeat(c, c.Nodes[0])
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap), `"links":{"link_mbps":40,"rack_mbps":{"rack-a":10,"rack-b":40}}`) {
		t.Fatalf("snapshot %s lacks the estimates", snap)
	}
	b := pipe()
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ links, field string }{
		{`{"link_mbps":0,"rack_mbps":{"r":1}}`, "links.link_mbps"},
		{`{"link_mbps":5,"rack_mbps":{"r":-1}}`, `links.rack_mbps["r"]`},
	} {
		doc := fmt.Sprintf(`{"initialized":false,"stages":{"reduce-placement":{"plans":[],"links":%s}}}`, bad.links)
		if err := pipe().Restore([]byte(doc)); err == nil || !strings.Contains(err.Error(), bad.field) {
			t.Errorf("restore %s: %v, want an error naming %s", bad.links, err, bad.field)
		}
	}
}

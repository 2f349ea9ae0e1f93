package filter

import (
	"encoding/json"
	"fmt"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// DelayScheduling is Zaharia et al.'s delay scheduling (EuroSys'10,
// Algorithm 2) as a LaunchFilter: a job whose best map on this node is not
// node-local is skipped (the slot goes to the next job in order) until it
// has waited NodeLocalWaitS since it was first skipped; after that it may
// launch rack-local maps, and after NodeLocalWaitS + RackLocalWaitS any
// map. A node-local launch resets the job's wait. Reduces, input-less maps
// and speculative copies pass.
type DelayScheduling struct {
	// NodeLocalWaitS (W1) and RackLocalWaitS (W2) in seconds. Default 5 s
	// each, a few heartbeats: the paper shows a wait of a small multiple of
	// the heartbeat interval reaches almost full locality.
	NodeLocalWaitS, RackLocalWaitS float64
	// waitSince is when each job was first skipped (absent: not waiting).
	waitSince map[string]float64
}

var (
	_ policy.LaunchFilter = (*DelayScheduling)(nil)
	_ policy.Committer    = (*DelayScheduling)(nil)
	_ policy.Stateful     = (*DelayScheduling)(nil)
)
var _ policy.Tunable = (*DelayScheduling)(nil)

// NewDelayScheduling returns delay scheduling with waits w1, w2 seconds.
func NewDelayScheduling(w1, w2 float64) (*DelayScheduling, error) {
	d := &DelayScheduling{NodeLocalWaitS: w1, RackLocalWaitS: w2, waitSince: map[string]float64{}}
	if err := d.tunable().Check(NameDelayScheduling); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *DelayScheduling) tunable() policy.ParamSet {
	return policy.ParamSet{
		policy.FloatParam(&d.NodeLocalWaitS, policy.Param{Name: "node_local_wait_s", Default: 5, Min: 0, Max: 600, Doc: "W1: wait for a node-local slot before accepting rack-local"}),
		policy.FloatParam(&d.RackLocalWaitS, policy.Param{Name: "rack_local_wait_s", Default: 5, Min: 0, Max: 600, Doc: "W2: further wait before accepting off-rack"}),
	}
}

// Name implements policy.Plugin.
func (*DelayScheduling) Name() string { return NameDelayScheduling }

// Params implements policy.Tunable.
func (d *DelayScheduling) Params() []policy.Param { return d.tunable().Params() }

// SetParam implements policy.Tunable.
func (d *DelayScheduling) SetParam(name string, v float64) error {
	return d.tunable().Set(NameDelayScheduling, name, v)
}

// Admit implements policy.LaunchFilter. It only reads the wait clocks;
// Commit moves them.
func (d *DelayScheduling) Admit(hb *policy.Heartbeat, a policy.Action) (bool, string) {
	if a.Kind != policy.ActionStart || a.Type != models.MapTask || a.Locality == policy.LocalityNone {
		return true, ""
	}
	now := hb.Cluster.NowS
	if a.Locality == policy.NodeLocal {
		return true, fmt.Sprintf("%s: node-local map of %s", NameDelayScheduling, a.Job)
	}
	since, waiting := d.waitSince[a.Job]
	if !waiting {
		since = now // skipped now for the first time: the clock starts
	}
	waited := now - since
	allowed := policy.NodeLocal
	switch {
	case waited >= d.NodeLocalWaitS+d.RackLocalWaitS:
		allowed = policy.OffRack
	case waited >= d.NodeLocalWaitS:
		allowed = policy.RackLocal
	}
	if a.Locality <= allowed {
		return true, fmt.Sprintf("%s: %s waited %.1fs, %v allowed", NameDelayScheduling, a.Job, waited, allowed)
	}
	return false, fmt.Sprintf("%s: skip %s (%v map, waited %.1fs of %.1fs)", NameDelayScheduling, a.Job, a.Locality, waited, d.NodeLocalWaitS)
}

// Commit implements policy.Committer: a job's clock starts when its first
// map that is not node-local is skipped here (or starts), and stops when
// one of its node-local maps starts (Algorithm 2's "wait = 0"). A veto by
// another filter changes nothing: delay scheduling did not skip the job.
func (d *DelayScheduling) Commit(hb *policy.Heartbeat, a policy.Action, veto *policy.Veto) {
	if a.Kind != policy.ActionStart || a.Type != models.MapTask || a.Locality == policy.LocalityNone {
		return
	}
	if veto != nil && veto.Stage != NameDelayScheduling {
		return
	}
	if veto == nil && a.Locality == policy.NodeLocal {
		delete(d.waitSince, a.Job)
		return
	}
	if _, waiting := d.waitSince[a.Job]; !waiting {
		d.waitSince[a.Job] = hb.Cluster.NowS
	}
}

// TaskFinished implements Observer: it forgets the wait of a job that has
// finished or has no map left to place.
func (d *DelayScheduling) TaskFinished(c *policy.ClusterView, a *policy.AttemptView, _ float64) {
	if j := c.Job(a.Job); j == nil || len(j.PendingMaps) == 0 {
		delete(d.waitSince, a.Job)
	}
}

// Snapshot implements policy.Stateful: when each waiting job was first
// skipped.
func (d *DelayScheduling) Snapshot() ([]byte, error) {
	return json.Marshal(struct {
		WaitSince map[string]float64 `json:"wait_since"`
	}{d.waitSince})
}

// Restore implements policy.Stateful.
func (d *DelayScheduling) Restore(data []byte) error {
	var st struct {
		WaitSince map[string]float64 `json:"wait_since"`
	}
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	d.waitSince = st.WaitSince
	if d.waitSince == nil {
		d.waitSince = map[string]float64{}
	}
	return nil
}

package ledger

import (
	"encoding/json"
	"fmt"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Event is one change of a ledger, exactly one field set. A ledger is the
// result of its events applied in order to an empty one, which is how a
// server makes the ledger durable: it appends each change's event to its
// store before acknowledging the change and replays them on restart.
// Progress reports are not events: they are refreshed by every heartbeat.
type Event struct {
	Submit *JobSpec `json:"submit,omitempty"`
	// Heartbeat holds the actions a policy decided for a node (as decided,
	// not as applied: replaying them refuses the same ones).
	Heartbeat *HeartbeatEvent `json:"heartbeat,omitempty"`
	Finish    *FinishEvent    `json:"finish,omitempty"`
	// Fail and Remove name the failed attempt and the removed job.
	Fail   int    `json:"fail,omitempty"`
	Remove string `json:"remove,omitempty"`
	// Snapshot restores an idle ledger (see Ledger.Snapshot).
	Snapshot *SnapshotEvent `json:"snapshot,omitempty"`
}

// SnapshotEvent is all that is left of a ledger's history: the next
// attempt id, the typed slots the policy changed and, in a checkpoint of a
// busy ledger (see Checkpoint), the active jobs.
type SnapshotEvent struct {
	NextAttempt int               `json:"next_attempt"`
	Slots       map[string][2]int `json:"slots,omitempty"`
	Jobs        []JobCheckpoint   `json:"jobs,omitempty"`
}

// Snapshot returns the one event that rebuilds the ledger from an empty
// one, which exists only while no job is active (ok false otherwise): a
// server then replaces the event log with it, so the log holds the history
// of the active jobs only.
func (l *Ledger) Snapshot() (ev Event, ok bool) {
	if len(l.active) > 0 || len(l.attempt) > 0 {
		return Event{}, false
	}
	return Event{Snapshot: l.idleSnapshot()}, true
}

// idleSnapshot is the snapshot of the ledger without its jobs.
func (l *Ledger) idleSnapshot() *SnapshotEvent {
	s := &SnapshotEvent{NextAttempt: l.nextID}
	for i, n := range l.nodes {
		c := l.cfg.Cluster.Nodes[i]
		if n.mapSlots != c.MapSlots || n.reduceSlots != c.ReduceSlots {
			if s.Slots == nil {
				s.Slots = map[string][2]int{}
			}
			s.Slots[n.id] = [2]int{n.mapSlots, n.reduceSlots}
		}
	}
	return s
}

func (l *Ledger) restore(s *SnapshotEvent) error {
	if len(l.active) > 0 || len(l.attempt) > 0 || s.NextAttempt < l.nextID {
		return fmt.Errorf("%w: a snapshot applies to an idle ledger and never lowers the attempt ids", ErrInvalid)
	}
	for id, sl := range s.Slots {
		n := l.nodeAt[id]
		if n == nil || sl[0] < 0 || sl[1] < 0 {
			return fmt.Errorf("%w: snapshot: slots %v of node %q", ErrInvalid, sl, id)
		}
		n.mapSlots, n.reduceSlots = sl[0], sl[1]
		n.view = nil
	}
	l.nextID = s.NextAttempt
	return l.restoreJobs(s.Jobs)
}

// HeartbeatEvent is a heartbeat's decided actions.
type HeartbeatEvent struct {
	Node    string         `json:"node"`
	NowS    float64        `json:"now_s"`
	Actions []ActionRecord `json:"actions"`
}

// ActionRecord is the durable form of a policy.Action: what Apply reads
// (not the reason, which is logged, nor the locality, which Apply derives).
type ActionRecord struct {
	Kind        policy.ActionKind `json:"k"`
	Job         string            `json:"j,omitempty"`
	Type        uint8             `json:"t,omitempty"`
	Task        int               `json:"i,omitempty"`
	Attempt     int               `json:"a,omitempty"`
	Slot        uint8             `json:"s,omitempty"`
	Resources   models.Resources  `json:"r,omitempty"`
	MapSlots    int               `json:"m,omitempty"`
	ReduceSlots int               `json:"n,omitempty"`
}

// Records converts actions to their durable form.
func Records(actions []policy.Action) []ActionRecord {
	out := make([]ActionRecord, len(actions))
	for i, a := range actions {
		out[i] = ActionRecord{Kind: a.Kind, Job: a.Job, Type: uint8(a.Type), Task: a.Task, Attempt: a.Attempt, Slot: uint8(a.Slot),
			Resources: a.Resources, MapSlots: a.MapSlots, ReduceSlots: a.ReduceSlots}
	}
	return out
}

// actions converts records back to actions on node.
func actions(node string, recs []ActionRecord) []policy.Action {
	out := make([]policy.Action, len(recs))
	for i, r := range recs {
		out[i] = policy.Action{Kind: r.Kind, Job: r.Job, Type: models.TaskType(r.Type), Task: r.Task, Attempt: r.Attempt, Node: node,
			Slot: models.TaskType(r.Slot), Resources: r.Resources, MapSlots: r.MapSlots, ReduceSlots: r.ReduceSlots}
	}
	return out
}

// FinishEvent is an attempt's completion.
type FinishEvent struct {
	NowS    float64 `json:"now_s"`
	Attempt int     `json:"attempt"`
	// OutputMB is a map's reported output (0: unknown).
	OutputMB float64 `json:"output_mb,omitempty"`
}

// Replay applies one event.
func (l *Ledger) Replay(e Event) error {
	set := 0
	for _, b := range []bool{e.Submit != nil, e.Heartbeat != nil, e.Finish != nil, e.Fail != 0, e.Remove != "", e.Snapshot != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("%w: an event sets exactly one change, this one sets %d", ErrInvalid, set)
	}
	switch {
	case e.Submit != nil:
		return l.Submit(*e.Submit)
	case e.Heartbeat != nil:
		_, _, err := l.Apply(e.Heartbeat.Node, e.Heartbeat.NowS, actions(e.Heartbeat.Node, e.Heartbeat.Actions))
		return err
	case e.Finish != nil:
		_, err := l.FinishWithOutput(e.Finish.NowS, e.Finish.Attempt, e.Finish.OutputMB, nil)
		return err
	case e.Fail != 0:
		return l.Fail(e.Fail)
	case e.Snapshot != nil:
		return l.restore(e.Snapshot)
	default:
		return l.Remove(e.Remove)
	}
}

// Encode returns the event's durable form.
func (e Event) Encode() ([]byte, error) { return json.Marshal(e) }

// DecodeEvent decodes an event's durable form.
func DecodeEvent(data []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(data, &e); err != nil {
		return Event{}, fmt.Errorf("%w: event: %w", ErrInvalid, err)
	}
	return e, nil
}

// Granting reports whether an attempt on node id holds a grant other than
// its request (the node's next Apply resets it, a change even without
// actions).
func (l *Ledger) Granting(id string) bool {
	n := l.nodeAt[id]
	if n == nil || l.dims == 0 {
		return false
	}
	for _, at := range n.running {
		if !at.granted.Equal(at.requested) {
			return true
		}
	}
	return false
}

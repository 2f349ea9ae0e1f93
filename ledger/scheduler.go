package ledger

import (
	"context"
	"fmt"

	"github.com/optd/optd/policy"
)

// Scheduler couples a cluster's ledger with its heartbeat pipeline: the
// decisions optd's Heartbeat RPC serves. The pipeline's own state (HaSTE's
// initial assignment, learned estimates, DHSA's counters) lives in memory
// only; the ledger's is made durable through Events.
type Scheduler struct {
	Ledger *Ledger
	Pipe   *policy.Pipeline
}

// Decision is the outcome of one heartbeat.
type Decision struct {
	Applied []Applied
	// Rejected counts the actions the pipeline decided and the ledger
	// refused, plus those the pipeline dropped itself.
	Rejected int
	// Event is the change to make durable (nil: nothing changed).
	Event *Event
}

// Heartbeat records node id's report at time now and, unless reportOnly
// (an out-of-band heartbeat) or no job is active, asks the pipeline for the
// node's actions and applies them. The report is checked first: a bad one
// changes nothing.
func (s *Scheduler) Heartbeat(ctx context.Context, id string, now float64, running []Status, reportOnly bool) (*Decision, error) {
	if err := s.Ledger.Report(id, running); err != nil {
		return nil, err
	}
	if reportOnly || s.Ledger.Active() == 0 {
		return &Decision{}, nil
	}
	c := s.Ledger.View(now)
	if err := s.Pipe.Init(ctx, c); err != nil {
		return nil, fmt.Errorf("policy %q: initial assignment: %w", s.Pipe.Spec(), err)
	}
	granting := s.Ledger.Granting(id)
	dropped := s.Pipe.Rejected
	actions := s.Pipe.Heartbeat(c, NodeView(c, id))
	applied, rejected, err := s.Ledger.Apply(id, now, actions)
	if err != nil {
		return nil, err
	}
	d := &Decision{Applied: applied, Rejected: rejected + s.Pipe.Rejected - dropped}
	if len(actions) > 0 || granting {
		d.Event = &Event{Heartbeat: &HeartbeatEvent{Node: id, NowS: now, Actions: Records(actions)}}
	}
	return d, nil
}

// Finish records attempt id's completion at time now, telling the
// pipeline's observers.
func (s *Scheduler) Finish(now float64, id int) (jobDone bool, ev *Event, err error) {
	var observe func(*policy.ClusterView, *policy.AttemptView, float64)
	if s.Pipe.HasObservers() {
		observe = s.Pipe.TaskFinished
	}
	jobDone, err = s.Ledger.Finish(now, id, observe)
	if err != nil {
		return false, nil, err
	}
	return jobDone, &Event{Finish: &FinishEvent{NowS: now, Attempt: id}}, nil
}

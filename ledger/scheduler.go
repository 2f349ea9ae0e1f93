package ledger

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/optd/optd/policy"
)

// Scheduler couples a cluster's ledger with its heartbeat pipeline: the one
// path every heartbeat decision takes, whether optd's Heartbeat RPC serves
// it, the cluster simulator runs it in process, or `optd replay` drives a
// server with it. The ledger's state is made durable through Events, the
// pipeline's learned state through Snapshot.
type Scheduler struct {
	Ledger *Ledger
	Pipe   *policy.Pipeline
}

// Beat is one heartbeat of a node.
type Beat struct {
	Node string
	NowS float64
	// Running reports progress; Finished and Failed list attempts of the
	// node that completed their task or failed since its last heartbeat.
	Running          []Status
	Finished, Failed []int
	// OutputMB gives the map output, in MB, of finished map attempts (by
	// attempt id; those absent are unknown): what a reduce-placement
	// stage estimates a job's intermediate data X from.
	OutputMB map[int]float64
	// ReportOnly makes it an out-of-band heartbeat: record, decide nothing.
	ReportOnly bool
}

// Decision is the outcome of one heartbeat.
type Decision struct {
	Applied []Applied
	// Rejected counts the actions the pipeline decided and the ledger
	// refused, plus those the pipeline dropped itself.
	Rejected int
	// Vetoes are the candidates the pipeline's filters and gates refused,
	// with their reasons.
	Vetoes []policy.Veto
	// JobsDone are the jobs whose last task one of Finished completed.
	JobsDone []string
	// Events are the changes to make durable, in order.
	Events []Event
}

// Submit makes a job active and returns the event that records it.
func (s *Scheduler) Submit(spec JobSpec) (Event, error) {
	if err := s.Ledger.Submit(spec); err != nil {
		return Event{}, err
	}
	return Event{Submit: &spec}, nil
}

// Heartbeat records a node's heartbeat (completions, then failures, then
// progress) and, unless it is report-only or no job is active, asks the
// pipeline for the node's actions and applies them. A heartbeat that does
// not fit the ledger (an unknown node or attempt, a bad phase or progress)
// is refused whole and changes nothing. If the pipeline's initial
// assignment fails, the completions and failures are recorded (see
// Decision.Events) and the error returned.
func (s *Scheduler) Heartbeat(ctx context.Context, b Beat) (*Decision, error) {
	l := s.Ledger
	if err := l.CheckHeartbeat(b.Node, b.NowS, b.Running, b.Finished, b.Failed); err != nil {
		return nil, err
	}
	d := &Decision{}
	var observe func(*policy.ClusterView, *policy.AttemptView, float64)
	if s.Pipe.HasObservers() {
		observe = s.Pipe.TaskFinished
	}
	if err := l.checkOutputs(b.Finished, b.OutputMB); err != nil {
		return nil, err
	}
	for _, id := range b.Finished {
		job := l.attempt[id].task.job.spec.ID
		out := b.OutputMB[id]
		done, err := l.FinishWithOutput(b.NowS, id, out, observe)
		if err != nil {
			return nil, err // unreachable after CheckHeartbeat and checkOutputs
		}
		if done {
			d.JobsDone = append(d.JobsDone, job)
		}
		d.Events = append(d.Events, Event{Finish: &FinishEvent{NowS: b.NowS, Attempt: id, OutputMB: out}})
	}
	for _, id := range b.Failed {
		if err := l.Fail(id); err != nil {
			return nil, err // unreachable after CheckHeartbeat
		}
		d.Events = append(d.Events, Event{Fail: id})
	}
	l.report(b.Running)
	if b.ReportOnly || l.Active() == 0 {
		return d, nil
	}
	c := l.View(b.NowS)
	if err := s.Pipe.Init(ctx, c); err != nil {
		return d, fmt.Errorf("policy %q: initial assignment: %w", s.Pipe.Spec(), err)
	}
	granting := l.Granting(b.Node)
	// A deadlock of reducers and waiting maps is broken before the
	// pipeline is asked (see preempt.go); such a heartbeat is the
	// preemption's alone: the pipeline could start no map anywhere, and
	// its view would miss the kills.
	actions := l.preempt(b.Node)
	if actions == nil {
		pd := s.Pipe.Heartbeat(c, c.Node(b.Node))
		actions, d.Rejected, d.Vetoes = pd.Actions, pd.Dropped, pd.Vetoes
	}
	applied, rejected, err := l.Apply(b.Node, b.NowS, actions)
	if err != nil {
		return nil, err // unreachable: the node exists
	}
	d.Applied, d.Rejected = applied, d.Rejected+rejected
	if len(actions) > 0 || granting {
		d.Events = append(d.Events, Event{Heartbeat: &HeartbeatEvent{Node: b.Node, NowS: b.NowS, Actions: Records(actions)}})
	}
	return d, nil
}

// checkOutputs validates a heartbeat's map outputs: each of an attempt
// the heartbeat finishes, a map, finite and ≥ 0.
func (l *Ledger) checkOutputs(finished []int, out map[int]float64) error {
	for _, id := range slices.Sorted(maps.Keys(out)) {
		if !slices.Contains(finished, id) {
			return fmt.Errorf("%w: output_mb[%d]: attempt %d is not among the finished", ErrInvalid, id, id)
		}
		if err := checkOutput(id, l.attempt[id].task.typ, out[id]); err != nil {
			return err
		}
	}
	return nil
}

package ledger

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Checkpoints: the ledger's durable state as one event.
//
// A server makes a ledger durable by appending each change's event to its
// store and replaying them on restart; with a job always active, that log
// would grow with the history. Checkpoint returns one event that rebuilds
// what replaying the events rebuilds: the typed slots, the next attempt id
// and every active job with its stage, the state of each task of the stage,
// the summed durations of its done tasks and its running attempts. Progress
// reports are not in it, as they are in no event (soft state, refreshed by
// every heartbeat). The server replaces its log with a checkpoint once the
// events since the last one outweigh it, so that the log, and the time to
// rebuild the ledger, follow the live state.

// JobCheckpoint is an active job in a checkpoint.
type JobCheckpoint struct {
	// Spec is the job as submitted (its weight defaulted).
	Spec JobSpec `json:"spec"`
	// Stage is the index of the current stage.
	Stage int `json:"stage,omitempty"`
	// Maps and Reduces hold one character per task of the current stage,
	// in order: '.' never started, 's' started and not done (running, or
	// pending again after its attempts failed or were killed), 'd' done.
	Maps    string `json:"maps"`
	Reduces string `json:"reduces"`
	// DurationsS sums the durations of the stage's done maps and reduces.
	DurationsS [2]float64 `json:"durations_s"`
	// Attempts are the job's running attempts.
	Attempts []AttemptCheckpoint `json:"attempts,omitempty"`
	// Outputs are the stage's finished maps' outputs by node.
	Outputs []policy.NodeOutput `json:"outputs,omitempty"`
}

// AttemptCheckpoint is a running attempt in a checkpoint.
type AttemptCheckpoint struct {
	ID          int              `json:"id"`
	Type        uint8            `json:"t"`
	Task        int              `json:"i"`
	Node        string           `json:"node"`
	Slot        uint8            `json:"s,omitempty"`
	StartS      float64          `json:"start_s"`
	Requested   models.Resources `json:"r,omitempty"`
	Granted     models.Resources `json:"g,omitempty"`
	Speculative bool             `json:"spec,omitempty"`
}

// Checkpoint returns the one event that rebuilds the ledger's durable state
// from an empty ledger of the same configuration (see the file comment).
func (l *Ledger) Checkpoint() Event {
	s := l.idleSnapshot()
	for _, j := range l.active {
		jc := JobCheckpoint{Spec: j.spec, Stage: j.stage, DurationsS: j.durSum,
			Maps: taskStates(j.tasks[0]), Reduces: taskStates(j.tasks[1]), Outputs: slices.Clone(j.outputs)}
		for _, ts := range j.tasks {
			for _, t := range ts {
				if t.done {
					continue
				}
				for _, at := range t.attempts {
					jc.Attempts = append(jc.Attempts, AttemptCheckpoint{ID: at.id, Type: uint8(t.typ), Task: t.index, Node: at.node.id,
						Slot: uint8(at.slot), StartS: at.startS, Requested: at.requested, Granted: at.granted, Speculative: at.speculative})
				}
			}
		}
		// By id, which is the order of the starts: the order of a task's
		// attempts and of a node's.
		slices.SortFunc(jc.Attempts, func(a, b AttemptCheckpoint) int { return cmp.Compare(a.ID, b.ID) })
		s.Jobs = append(s.Jobs, jc)
	}
	return Event{Snapshot: s}
}

func taskStates(ts []*task) string {
	var b strings.Builder
	for _, t := range ts {
		switch {
		case t.done:
			b.WriteByte('d')
		case t.started:
			b.WriteByte('s')
		default:
			b.WriteByte('.')
		}
	}
	return b.String()
}

// restoreJobs rebuilds the active jobs of a checkpoint on a ledger restored
// to its slots and attempt ids, checking that every job, task and attempt
// fits.
func (l *Ledger) restoreJobs(jobs []JobCheckpoint) error {
	var attempts []*attempt
	for _, jc := range jobs {
		if err := l.Submit(jc.Spec); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		j := l.jobAt[jc.Spec.ID]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: checkpoint of job %q: %s", ErrInvalid, j.spec.ID, fmt.Sprintf(format, args...))
		}
		if jc.Stage < 0 || jc.Stage >= len(j.spec.Stages) {
			return bad("stage %d of %d", jc.Stage, len(j.spec.Stages))
		}
		if jc.Stage > 0 {
			j.stage = jc.Stage
			l.startStage(j)
		}
		for k, states := range []string{jc.Maps, jc.Reduces} {
			if len(states) != len(j.tasks[k]) {
				return bad("%d task states for %d tasks", len(states), len(j.tasks[k]))
			}
			for i, c := range []byte(states) {
				t := j.tasks[k][i]
				switch c {
				case 'd':
					t.done, t.started = true, true
					j.done[k]++
					j.assigned[k]++
				case 's':
					t.started = true
					j.assigned[k]++
				case '.':
				default:
					return bad("task state %q", c)
				}
			}
		}
		j.durSum = jc.DurationsS
		maps := 0
		for _, o := range jc.Outputs {
			if l.nodeAt[o.Node] == nil || o.Maps < 1 || !(o.MB >= 0) || math.IsInf(o.MB, 0) {
				return bad("map outputs %+v", o)
			}
			j.addOutput(o.Node, o.Maps, o.MB)
			maps += o.Maps
		}
		// A checkpoint written before outputs were recorded has none.
		if len(jc.Outputs) > 0 && maps != j.done[0] {
			return bad("map outputs of %d maps, %d done", maps, j.done[0])
		}
		for _, ac := range jc.Attempts {
			tt := models.TaskType(ac.Type)
			if !tt.Valid() || ac.Task < 0 || ac.Task >= len(j.tasks[tt-1]) {
				return bad("attempt %d of task %d of type %d", ac.ID, ac.Task, ac.Type)
			}
			t, n := j.tasks[tt-1][ac.Task], l.nodeAt[ac.Node]
			switch {
			case n == nil:
				return bad("attempt %d on unknown node %q", ac.ID, ac.Node)
			case t.done || !t.started:
				return bad("attempt %d of a task that is done or never started", ac.ID)
			case ac.ID < 1 || ac.ID > l.nextID || l.attempt[ac.ID] != nil:
				return bad("attempt id %d (next %d, or used twice)", ac.ID, l.nextID)
			case len(ac.Requested) != l.dims || len(ac.Granted) != l.dims:
				return bad("attempt %d holds resources of %d and %d dimensions, the cluster has %d", ac.ID, len(ac.Requested), len(ac.Granted), l.dims)
			}
			at := &attempt{id: ac.ID, task: t, node: n, slot: models.TaskType(ac.Slot), startS: ac.StartS,
				requested: ac.Requested, granted: ac.Granted, speculative: ac.Speculative}
			at.phase, at.progress = initialStatus(tt)
			l.track(at)
			attempts = append(attempts, at)
		}
	}
	// Tasks and nodes list their attempts in the order of the starts.
	slices.SortFunc(attempts, func(a, b *attempt) int { return cmp.Compare(a.id, b.id) })
	for _, at := range attempts {
		at.task.attempts = append(at.task.attempts, at)
		at.node.running = append(at.node.running, at)
		at.node.view, at.task.job.view = nil, nil
	}
	return nil
}

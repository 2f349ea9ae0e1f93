package ledger

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Applied is an action the ledger carried out. Attempt is the attempt a
// Start or Speculate created (numbered 1, 2, … in the order of creation);
// Kill and Adjust keep the attempt they act on.
type Applied struct {
	policy.Action
	// Source is the attempt a Speculate copied.
	Source int
}

// Apply carries out one heartbeat's actions on node id at time now, in
// order, refusing those that do not fit the ledger's state (the count is
// returned; a refused action changes nothing). Grants beyond a request last
// one heartbeat: every attempt on the node is reset to its request before
// the Adjust actions are applied, after all the others. The cluster
// simulator carries out exactly the applied actions, in this order.
func (l *Ledger) Apply(id string, now float64, actions []policy.Action) (applied []Applied, rejected int, err error) {
	n := l.nodeAt[id]
	if n == nil {
		return nil, 0, fmt.Errorf("%w: node %q", ErrUnknown, id)
	}
	var adjusts []policy.Action
	// occ is n's occupancy, computed once and kept up to date by start, so
	// that a heartbeat of k starts costs O(running + k), not O(running · k);
	// a kill (of an attempt possibly elsewhere) makes it stale (nil).
	var occ *models.Occupancy
	for _, a := range actions {
		switch a.Kind {
		case policy.ActionSlots:
			m, r, ok := l.setSlots(n, a.MapSlots, a.ReduceSlots)
			if !ok {
				rejected++
			}
			a.MapSlots, a.ReduceSlots, a.Node = m, r, n.id
			applied = append(applied, Applied{Action: a})
		case policy.ActionStart, policy.ActionSpeculate:
			if occ == nil {
				o := n.used(l.dims)
				occ = &o
			}
			at, ok := l.start(n, occ, a, now)
			if !ok {
				rejected++
				continue
			}
			out := Applied{Action: a}
			if a.Kind == policy.ActionSpeculate {
				out.Source = a.Attempt
			}
			out.Attempt, out.Node, out.Slot, out.Resources = at.id, n.id, at.slot, at.requested
			out.Job, out.Type, out.Task = at.task.job.spec.ID, at.task.typ, at.task.index
			applied = append(applied, out)
		case policy.ActionKill:
			if !l.kill(a.Attempt) {
				rejected++
				continue
			}
			occ = nil
			applied = append(applied, Applied{Action: a})
		case policy.ActionAdjust:
			adjusts = append(adjusts, a)
		default:
			rejected++
		}
	}
	if l.dims == 0 {
		return applied, rejected + len(adjusts), nil
	}
	for _, at := range n.running {
		if !at.granted.Equal(at.requested) {
			at.granted = at.requested.Clone()
			at.changed()
		}
	}
	granted := n.used(l.dims).Granted // kept up to date below: O(running + adjusts)
	for _, a := range adjusts {
		at := l.attempt[a.Attempt]
		if at == nil || at.node != n || len(a.Resources) != l.dims || hasNegative(a.Resources) {
			rejected++
			continue
		}
		next := granted.Sub(at.granted).Add(a.Resources)
		if !next.Fits(n.capacity) {
			rejected++
			continue
		}
		granted = next
		at.granted = a.Resources.Clone()
		at.changed()
		applied = append(applied, Applied{Action: a})
	}
	return applied, rejected, nil
}

func hasNegative(r models.Resources) bool {
	for _, v := range r {
		if v < 0 {
			return true
		}
	}
	return false
}

// setSlots sets node n's typed slots, never below the slots in use (ok is
// false when it had to raise them).
func (l *Ledger) setSlots(n *node, m, r int) (int, int, bool) {
	o := n.used(0)
	ok := m >= o.MapSlots && r >= o.ReduceSlots
	n.mapSlots, n.reduceSlots = max(m, o.MapSlots), max(r, o.ReduceSlots)
	n.view = nil
	return n.mapSlots, n.reduceSlots, ok
}

// start launches a task (or a speculative copy of attempt a.Attempt's task)
// on n if the action is valid; o is n's occupancy, to which the new attempt
// is added.
func (l *Ledger) start(n *node, o *models.Occupancy, a policy.Action, now float64) (*attempt, bool) {
	var t *task
	if a.Kind == policy.ActionSpeculate {
		orig := l.attempt[a.Attempt]
		if orig == nil || orig.task.done {
			return nil, false
		}
		t = orig.task
	} else {
		j := l.jobAt[a.Job]
		if j == nil || !a.Type.Valid() || a.Task < 0 || a.Task >= len(j.tasks[a.Type-1]) {
			return nil, false
		}
		t = j.tasks[a.Type-1][a.Task]
		if t.done || len(t.attempts) > 0 || (t.typ == models.ReduceTask && !l.reduceStartable(j)) {
			return nil, false
		}
	}
	req := a.Resources
	if req == nil {
		req = t.job.demand[t.typ]
	}
	slot := a.Slot
	if slot == 0 && l.slots {
		slot = t.typ
	}
	if l.dims > 0 && (len(req) != l.dims || hasNegative(req) || !o.Requested.Add(req).Fits(n.capacity) || !t.job.demand[t.typ].Fits(req)) {
		return nil, false
	}
	if l.slots && ((slot == models.MapTask && o.MapSlots >= n.mapSlots) || (slot == models.ReduceTask && o.ReduceSlots >= n.reduceSlots) || !slot.Valid()) {
		return nil, false
	}
	if !l.slots {
		slot = 0
	}
	l.nextID++
	at := &attempt{id: l.nextID, task: t, node: n, slot: slot, startS: now, requested: req.Clone(), granted: req.Clone(),
		speculative: a.Kind == policy.ActionSpeculate}
	at.phase, at.progress = initialStatus(t.typ)
	if !t.started {
		t.started = true
		t.job.assigned[t.typ-1]++
	}
	t.attempts = append(t.attempts, at)
	n.running = append(n.running, at)
	o.Add(at.requested, at.granted, at.slot)
	l.track(at)
	n.view, t.job.view = nil, nil
	return at, true
}

// initialStatus is the phase and progress of an attempt its node has not
// reported yet: the first phase of its type, nothing done.
func initialStatus(t models.TaskType) (models.Phase, float64) {
	if t == models.MapTask {
		return models.PhaseMap, 0
	}
	return models.PhaseShuffle, 0
}

// finalStatus is the phase and progress of a finished attempt.
func finalStatus(t models.TaskType) (models.Phase, float64) {
	if t == models.MapTask {
		return models.PhaseMap, 1
	}
	return models.PhaseReduce, 1
}

// kill stops an attempt; a task left without attempts becomes pending.
func (l *Ledger) kill(id int) bool {
	at := l.attempt[id]
	if at == nil {
		return false
	}
	l.remove(at)
	at.task.attempts = slices.DeleteFunc(at.task.attempts, func(o *attempt) bool { return o == at })
	return true
}

// track adds an attempt to the running set.
func (l *Ledger) track(at *attempt) {
	l.attempt[at.id] = at
	if at.task.typ == models.MapTask {
		l.runningMaps++
	}
}

// remove takes an attempt off its node and out of the running set.
func (l *Ledger) remove(at *attempt) {
	delete(l.attempt, at.id)
	if at.task.typ == models.MapTask {
		l.runningMaps--
	}
	at.node.view, at.task.job.view = nil, nil
	n := at.node
	for i, o := range n.running {
		if o == at {
			n.running = append(n.running[:i], n.running[i+1:]...)
			break
		}
	}
}

// CheckHeartbeat checks, without changing anything, a heartbeat of node id
// at time now reporting the completion of finished, the failure of failed
// and the progress of running (attempts of the node, each listed once).
func (l *Ledger) CheckHeartbeat(id string, now float64, running []Status, finished, failed []int) error {
	n := l.nodeAt[id]
	if n == nil {
		return fmt.Errorf("%w: node %q", ErrUnknown, id)
	}
	if math.IsNaN(now) || math.IsInf(now, 0) {
		return fmt.Errorf("%w: now_s = %v", ErrInvalid, now)
	}
	seen := map[int]string{}
	check := func(field string, i, a int) error {
		at := l.attempt[a]
		if at == nil || at.node != n {
			return fmt.Errorf("%w: %s[%d]: attempt %d is not running on node %q", ErrUnknown, field, i, a, id)
		}
		if f, dup := seen[a]; dup {
			return fmt.Errorf("%w: %s[%d]: attempt %d is also in %s", ErrInvalid, field, i, a, f)
		}
		seen[a] = field
		return nil
	}
	for i, a := range finished {
		if err := check("finished", i, a); err != nil {
			return err
		}
		if at := l.attempt[a]; now < at.startS {
			return fmt.Errorf("%w: finished[%d]: attempt %d finished at %v, before it started at %v", ErrInvalid, i, a, now, at.startS)
		}
	}
	for i, a := range failed {
		if err := check("failed", i, a); err != nil {
			return err
		}
	}
	for i, s := range running {
		if err := check("running", i, s.Attempt); err != nil {
			return err
		}
		at := l.attempt[s.Attempt]
		if !validPhase(at.task.typ, s.Phase) {
			return fmt.Errorf("%w: running[%d]: phase %v is not a phase of a %v attempt", ErrInvalid, i, s.Phase, at.task.typ)
		}
		if !(s.Progress >= 0 && s.Progress <= 1) {
			return fmt.Errorf("%w: running[%d]: progress = %v: must be in [0, 1]", ErrInvalid, i, s.Progress)
		}
		if !(s.FetchMBps >= 0) || math.IsInf(s.FetchMBps, 0) || (s.FetchMBps > 0 && at.task.typ != models.ReduceTask) {
			return fmt.Errorf("%w: running[%d]: fetch_mbps = %v: must be a finite number ≥ 0, and 0 for a map", ErrInvalid, i, s.FetchMBps)
		}
	}
	return nil
}

// report records checked statuses.
func (l *Ledger) report(statuses []Status) {
	for _, s := range statuses {
		at := l.attempt[s.Attempt]
		if at.phase != s.Phase || at.progress != s.Progress || at.fetchMBps != s.FetchMBps {
			at.phase, at.progress, at.fetchMBps = s.Phase, s.Progress, s.FetchMBps
			at.changed()
		}
	}
}

func validPhase(t models.TaskType, p models.Phase) bool {
	for _, q := range t.Phases() {
		if q == p {
			return true
		}
	}
	return false
}

// Finish records that attempt id completed its task at time now: its
// task's other attempts are killed, and, when it was the stage's last task,
// the next stage starts or the job leaves the active set. observe (if not
// nil) is called after the completion is counted and before the stage
// changes, with the cluster's view and the attempt's: how the pipeline's
// observers learn of completions (see Scheduler.Heartbeat).
func (l *Ledger) Finish(now float64, id int, observe func(c *policy.ClusterView, a *policy.AttemptView, durationS float64)) (jobDone bool, err error) {
	return l.FinishWithOutput(now, id, 0, observe)
}

// FinishWithOutput is Finish with the output, in MB, of a map attempt (0:
// unknown), which the job's view then counts on the attempt's node.
func (l *Ledger) FinishWithOutput(now float64, id int, outputMB float64, observe func(c *policy.ClusterView, a *policy.AttemptView, durationS float64)) (jobDone bool, err error) {
	at := l.attempt[id]
	if at == nil {
		return false, fmt.Errorf("%w: attempt %d is not running", ErrUnknown, id)
	}
	if math.IsNaN(now) || now < at.startS {
		return false, fmt.Errorf("%w: attempt %d finished at %v, before it started at %v", ErrInvalid, id, now, at.startS)
	}
	if err := checkOutput(id, at.task.typ, outputMB); err != nil {
		return false, err
	}
	t := at.task
	j := t.job
	if t.typ == models.MapTask {
		j.addOutput(at.node.id, 1, outputMB)
	}
	t.done = true
	l.remove(at)
	for _, o := range t.attempts {
		if o != at && l.attempt[o.id] != nil {
			l.remove(o)
		}
	}
	dur := now - at.startS
	k := t.typ - 1
	j.done[k]++
	j.durSum[k] += dur
	at.phase, at.progress = finalStatus(t.typ)
	if observe != nil {
		c := l.View(now)
		observe(c, l.attemptView(at), dur)
	}
	if j.done[0] == len(j.tasks[0]) && j.done[1] == len(j.tasks[1]) {
		j.stage++
		if j.stage < len(j.spec.Stages) {
			l.startStage(j)
			return false, nil
		}
		l.drop(j)
		return true, nil
	}
	return false, nil
}

// Fail records that attempt id failed (or was lost with its node): it stops
// and, if it was its task's last attempt, the task is pending again.
func (l *Ledger) Fail(id int) error {
	if !l.kill(id) {
		return fmt.Errorf("%w: attempt %d is not running", ErrUnknown, id)
	}
	return nil
}

// Remove drops an active job and kills its running attempts (the executor
// killed it or it ended outside optd's view).
func (l *Ledger) Remove(id string) error {
	j := l.jobAt[id]
	if j == nil {
		return fmt.Errorf("%w: job %q is not active", ErrUnknown, id)
	}
	for _, ts := range j.tasks {
		for _, t := range ts {
			for _, at := range t.attempts {
				if l.attempt[at.id] != nil {
					l.remove(at)
				}
			}
		}
	}
	l.drop(j)
	return nil
}

func (l *Ledger) drop(j *job) {
	delete(l.jobAt, j.spec.ID)
	l.tasks -= j.spec.Tasks()
	for i, a := range l.active {
		if a == j {
			l.active = append(l.active[:i], l.active[i+1:]...)
			break
		}
	}
}

// checkOutput validates a reported map output: finite, ≥ 0, and of a map.
func checkOutput(id int, t models.TaskType, mb float64) error {
	switch {
	case !(mb >= 0) || math.IsInf(mb, 0):
		return fmt.Errorf("%w: output_mb[%d] = %v: must be a finite number ≥ 0", ErrInvalid, id, mb)
	case mb > 0 && t != models.MapTask:
		return fmt.Errorf("%w: output_mb[%d] = %v: attempt %d is a %v, only maps report output", ErrInvalid, id, mb, id, t)
	}
	return nil
}

// addOutput counts maps finished on node with their output.
func (j *job) addOutput(node string, maps int, mb float64) {
	k, found := slices.BinarySearchFunc(j.outputs, node, func(o policy.NodeOutput, n string) int { return strings.Compare(o.Node, n) })
	if !found {
		j.outputs = slices.Insert(j.outputs, k, policy.NodeOutput{Node: node})
	}
	j.outputs[k].Maps += maps
	j.outputs[k].MB += mb
}

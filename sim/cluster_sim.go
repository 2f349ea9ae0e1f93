package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// ErrStalled is returned when a cluster run stops making progress (nothing
// running, nothing left to arrive, and no task started for StallS beyond
// two heartbeats).
var ErrStalled = errkind.New(errkind.Internal, "sim: cluster run stalled")

// ErrInvariant is returned by a run with ClusterOptions.CheckInvariants when
// the simulator's state breaks one (a simulator bug).
var ErrInvariant = errkind.New(errkind.Internal, "sim: invariant violated")

// ErrRunLimit is returned when a cluster run reaches its scenario's
// max_events or max_simulated_s (ClusterScenario.MaxEvents,
// MaxSimulatedS) with jobs unfinished.
var ErrRunLimit = errkind.New(errkind.Invalid, "sim: cluster run limit reached")

// StallS is how long a run may go without starting or finishing a task
// while nothing runs before it fails with ErrStalled, beyond two heartbeat
// intervals.
const StallS = 3600

// Event kinds of the cluster model.
const (
	evSubmit = iota + 1
	evHeartbeat
	evMilestone // an attempt reaches the end of its shuffle or of its work
	evSample
)

// ClusterOptions tunes a run.
type ClusterOptions struct {
	// Seed seeds block replicas, task works and skew (streams
	// StreamLocality, StreamTaskWork): the same seed gives every policy
	// the same cluster and jobs (common random numbers).
	Seed uint64
	// CheckInvariants verifies after every event that no node is over
	// capacity (requests and grants) or over its slots, that every task
	// completes once, and that no reducer finishes before its stage's maps.
	CheckInvariants bool
	// Progress, if set, is called with the fraction of jobs finished
	// whenever a job finishes.
	Progress func(done, total int)
	// ControlPlane, if set, is the scheduler of the run in place of the
	// pipeline in process (which RunCluster then takes as nil): see
	// ControlPlane.
	ControlPlane ControlPlane
	// Explain collects every heartbeat's vetoes into ClusterResult.Vetoes.
	Explain bool
}

// clusterSim is one run.
type clusterSim struct {
	sc  *ClusterScenario
	opt ClusterOptions
	// ctl decides every heartbeat; who names it in errors.
	ctl     ControlPlane
	who     string
	ctx     context.Context
	eng     *Engine
	dims    int
	vcores  int
	total   models.Resources
	nodes   []*simNode
	nodeAt  map[string]*simNode
	jobs    []*simJob
	active  []*simJob
	attempt map[int]*simAttempt
	racks   []models.Rack
	slots   bool // slot-based cluster
	// net is the shuffle network (nil without ClusterScenario.Network),
	// netHandle its next completion event.
	net       *flowNet
	netHandle Handle

	finished      int
	completed     int // successful task completions, all stages
	lastProgressS float64
	pendingSubmit int
	rejected      int
	preempted     int // reducers killed by ledger.PreemptReason
	vetoes        vetoLog
	err           error
	// replicas[job][stage][map] are the nodes holding the map's block.
	replicas [][][][]int

	met *clusterMetrics
}

// RunCluster simulates the scenario under the pipeline until every job has
// finished, and returns the metrics. The pipeline must be fresh (its stages
// keep state); it decides through a ledger.Scheduler, the path optd's
// Heartbeat RPC takes. A run is a deterministic function of the scenario,
// the pipeline and the seed. With opt.ControlPlane set, pipe must be nil:
// the control plane decides.
func RunCluster(ctx context.Context, scenario *ClusterScenario, pipe *policy.Pipeline, opt ClusterOptions) (*ClusterResult, error) {
	sc := scenario.withDefaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	if (pipe == nil) == (opt.ControlPlane == nil) {
		return nil, errors.New("sim: RunCluster needs exactly one of a pipeline and a ClusterOptions.ControlPlane")
	}
	s, err := newClusterSim(sc, pipe, opt)
	if err != nil {
		return nil, err
	}
	s.ctx = ctx
	for s.finished < len(s.jobs) {
		if s.eng.processed&4095 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		ev, ok := s.eng.Step()
		if !ok {
			return nil, fmt.Errorf("%w: no event left with %d of %d jobs unfinished", ErrStalled, len(s.jobs)-s.finished, len(s.jobs))
		}
		if err := s.checkLimits(ev.Time); err != nil {
			return nil, err
		}
		s.met.advance(s, ev.Time)
		switch ev.Kind {
		case evSubmit:
			if err := s.submit(ctx, s.jobs[ev.Arg]); err != nil {
				return nil, err
			}
		case evHeartbeat:
			if err := s.heartbeat(ctx, s.nodes[ev.Arg]); err != nil {
				return nil, err
			}
		case evMilestone:
			s.milestone(ev.Arg)
		case evSample:
			s.met.sample(s)
			s.eng.Schedule(ev.Time+sc.SampleS, evSample, 0)
		case evNetwork:
			s.networkEvent()
		}
		s.settleNetwork()
		if s.err != nil {
			return nil, s.err
		}
		if opt.CheckInvariants {
			if err := s.checkInvariants(); err != nil {
				return nil, err
			}
		}
		// Stalled: nothing ran for StallS beyond two heartbeats (a node
		// starts tasks only at its heartbeats, which may come hours apart).
		if stall := StallS + 2*sc.HeartbeatS; s.pendingSubmit == 0 && s.finished < len(s.jobs) && s.runningCount() == 0 && ev.Time-s.lastProgressS > stall {
			return nil, fmt.Errorf("%w at %.1f s: nothing has run for %.6g s under policy %q (%d jobs unfinished)", ErrStalled, ev.Time, stall, s.who, len(s.jobs)-s.finished)
		}
	}
	if opt.CheckInvariants {
		if err := s.checkFinal(); err != nil {
			return nil, err
		}
	}
	return s.result(), nil
}

// checkLimits stops the run at its scenario's max_events or
// max_simulated_s.
func (s *clusterSim) checkLimits(now float64) error {
	left := len(s.jobs) - s.finished
	switch {
	case s.eng.processed > s.sc.MaxEvents:
		return fmt.Errorf("%w: max_events = %d processed at %.6g s simulated with %d of %d jobs unfinished; raise max_events, or check the values that make the run long (network.node_mbps, oversubscription, heartbeat_s, the works)",
			ErrRunLimit, s.sc.MaxEvents, now, left, len(s.jobs))
	case now > s.sc.MaxSimulatedS:
		return fmt.Errorf("%w: the clock passed max_simulated_s = %.6g s with %d of %d jobs unfinished; raise max_simulated_s, or check the values that make the run long (network.node_mbps, oversubscription, the works)",
			ErrRunLimit, s.sc.MaxSimulatedS, left, len(s.jobs))
	}
	return nil
}

func newClusterSim(sc *ClusterScenario, pipe *policy.Pipeline, opt ClusterOptions) (*clusterSim, error) {
	s := &clusterSim{
		sc: sc, opt: opt, ctl: opt.ControlPlane, who: "the control plane", eng: NewEngine(),
		dims:    len(sc.Cluster.Resources),
		vcores:  sc.Cluster.Resources.Index(models.ResourceVCores),
		nodeAt:  map[string]*simNode{},
		attempt: map[int]*simAttempt{},
		racks:   sc.Cluster.Racks(),
	}
	if pipe != nil {
		led, err := ledger.New(sc.LedgerConfig())
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
		}
		s.ctl, s.who = inProcess{&ledger.Scheduler{Ledger: led, Pipe: pipe}}, pipe.Spec()
	}
	s.total = sc.Cluster.TotalCapacity()
	if sc.Network != nil {
		s.net = newFlowNet(sc.Network, &sc.Cluster)
	}
	speed := map[string]float64{}
	for _, st := range sc.Stragglers {
		speed[st.Node] = st.Speed
	}
	for i, n := range sc.Cluster.Nodes {
		sp := 1.0
		if v, ok := speed[n.ID]; ok {
			sp = v
		}
		sn := &simNode{idx: i, id: n.ID, rack: n.Rack, capacity: n.Capacity.Clone(), mapSlots: n.MapSlots, reduceSlots: n.ReduceSlots, speed: sp}
		if s.dims > 0 && sn.capacity == nil {
			sn.capacity = make(models.Resources, s.dims)
		}
		s.slots = s.slots || n.MapSlots+n.ReduceSlots > 0
		s.nodes = append(s.nodes, sn)
		s.nodeAt[n.ID] = sn
	}
	works := sc.drawWorks(opt.Seed)
	for i := range sc.Jobs {
		spec := &sc.Jobs[i]
		j := &simJob{idx: i, spec: spec, works: works[i], mapsDoneS: -1, demand: map[models.TaskType]models.Resources{}}
		for _, tt := range []models.TaskType{models.MapTask, models.ReduceTask} {
			d := spec.Demand[tt]
			if d == nil && s.dims > 0 {
				d = make(models.Resources, s.dims)
			}
			j.demand[tt] = d
		}
		s.jobs = append(s.jobs, j)
	}
	s.assignReplicas()
	s.met = newClusterMetrics(s)
	// Submissions first, so that at equal times a job is known before the
	// heartbeats of that instant.
	for _, j := range s.jobs {
		s.eng.Schedule(j.spec.SubmitS, evSubmit, j.idx)
		s.pendingSubmit++
	}
	n := len(s.nodes)
	for i := range s.nodes {
		s.eng.Schedule(float64(i)*sc.HeartbeatS/float64(n), evHeartbeat, i)
	}
	s.eng.Schedule(0, evSample, 0)
	return s, nil
}

// assignReplicas draws the input block replicas of every map of every
// stage, from its own stream so that works and replicas do not interact.
func (s *clusterSim) assignReplicas() {
	rng := NewRand(s.opt.Seed, StreamLocality)
	r := min(s.sc.Replicas, len(s.nodes))
	s.replicas = make([][][][]int, len(s.jobs))
	inRack := map[string][]int{}
	for _, n := range s.nodes {
		inRack[n.rack] = append(inRack[n.rack], n.idx)
	}
	for ji, j := range s.jobs {
		s.replicas[ji] = make([][][]int, j.spec.Stages)
		for st := range j.spec.Stages {
			reps := make([][]int, j.spec.Maps)
			for i := range reps {
				if racks := j.spec.InputRacks; len(racks) > 0 {
					nodes := inRack[racks[i%len(racks)]]
					perm := rng.Perm(len(nodes))[:min(r, len(nodes))]
					reps[i] = make([]int, len(perm))
					for k, p := range perm {
						reps[i][k] = nodes[p]
					}
					continue
				}
				reps[i] = rng.Perm(len(s.nodes))[:r]
			}
			s.replicas[ji][st] = reps
		}
	}
}

// startStage creates the tasks of job j's current stage (the ledger
// starts its own stage in Submit and Finish).
func (s *clusterSim) startStage(j *simJob) {
	j.tasks = [2][]*simTask{}
	j.done, j.durSum = [2]int{}, [2]float64{}
	j.mapsDoneS, j.shuffleEndS = -1, 0
	for k, tt := range []models.TaskType{models.MapTask, models.ReduceTask} {
		works := j.works[j.stage][k]
		ts := make([]*simTask, len(works))
		for i, w := range works {
			ts[i] = &simTask{job: j, typ: tt, index: i, work: w}
			if tt == models.MapTask {
				ts[i].replicas = s.replicas[j.idx][j.stage][i]
			}
		}
		j.tasks[k] = ts
	}
	if len(j.tasks[0]) == 0 {
		j.mapsDoneS = s.eng.Now()
	}
}

func (s *clusterSim) submit(ctx context.Context, j *simJob) error {
	j.submitted = true
	s.pendingSubmit--
	s.active = append(s.active, j)
	s.startStage(j)
	s.lastProgressS = s.eng.Now()
	if err := s.ctl.Submit(ctx, s.jobSpec(j)); err != nil {
		return fmt.Errorf("sim: job %s: %w", j.spec.ID, err)
	}
	return nil
}

func (s *clusterSim) runningCount() int { return len(s.attempt) }

// heartbeat sends node n's heartbeat with its progress report to the
// control plane and carries out its decision.
func (s *clusterSim) heartbeat(ctx context.Context, n *simNode) error {
	now := s.eng.Now()
	s.eng.Schedule(now+s.sc.HeartbeatS, evHeartbeat, n.idx)
	if len(s.active) == 0 {
		return nil
	}
	running := make([]ledger.Status, len(n.running))
	for i, at := range n.running {
		running[i] = at.report(now)
	}
	d, err := s.ctl.Heartbeat(ctx, ledger.Beat{Node: n.id, NowS: now, Running: running})
	if err != nil {
		return fmt.Errorf("sim: heartbeat of node %q at %v s: %w", n.id, now, err)
	}
	s.carryOut(n, d)
	return nil
}

// carryOut carries out a heartbeat's applied actions in order (the
// scheduler checked them against its ledger, with the simulator's rules):
// slot changes, starts and kills, then the grants (reset to the requests,
// as grants beyond a request last one heartbeat, then the adjustments).
func (s *clusterSim) carryOut(n *simNode, d *ledger.Decision) {
	now := s.eng.Now()
	s.rejected += d.Rejected
	if s.opt.Explain {
		s.vetoes.add(now, d.Vetoes)
	}
	var adjusts []ledger.Applied
	for _, a := range d.Applied {
		switch a.Kind {
		case policy.ActionSlots:
			n.mapSlots, n.reduceSlots = a.MapSlots, a.ReduceSlots
		case policy.ActionStart, policy.ActionSpeculate:
			s.launch(n, a)
		case policy.ActionKill:
			s.kill(n, a.Attempt)
			if strings.HasPrefix(a.Reason, ledger.PreemptReason) {
				s.preempted++
			}
		case policy.ActionAdjust:
			adjusts = append(adjusts, a)
		}
	}
	if s.dims == 0 {
		return
	}
	for _, at := range n.running {
		if !at.granted.Equal(at.requested) {
			s.setGrant(at, at.requested.Clone(), now)
		}
	}
	for _, a := range adjusts {
		at := s.attempt[a.Attempt]
		if at == nil || at.node != n {
			s.diverged(n, "adjust of attempt %d, which is not running on the node", a.Attempt)
			continue
		}
		s.setGrant(at, a.Resources.Clone(), now)
	}
}

// launch starts the attempt the scheduler created for a Start or
// Speculate.
func (s *clusterSim) launch(n *simNode, a ledger.Applied) {
	now := s.eng.Now()
	j := s.activeJob(a.Job)
	if j == nil || !a.Type.Valid() || a.Task < 0 || a.Task >= len(j.tasks[a.Type-1]) || s.attempt[a.Attempt] != nil {
		s.diverged(n, "%v of %s/%v#%d as attempt %d", a.Kind, a.Job, a.Type, a.Task, a.Attempt)
		return
	}
	t := j.tasks[a.Type-1][a.Task]
	if t.done || (a.Kind == policy.ActionStart) != (len(t.attempts) == 0) {
		s.diverged(n, "%v of %s/%v#%d, which has %d attempts (done %v)", a.Kind, a.Job, a.Type, a.Task, len(t.attempts), t.done)
		return
	}
	at := &simAttempt{id: a.Attempt, task: t, node: n, slot: a.Slot, startS: now, requested: a.Resources.Clone(), granted: a.Resources.Clone(),
		speculative: a.Kind == policy.ActionSpeculate, lastS: now}
	at.work = t.work
	if t.typ == models.MapTask && len(t.replicas) > 0 {
		at.locality = s.localityOf(t, n)
		switch at.locality {
		case policy.RackLocal:
			at.work *= 1 + s.sc.RackLocalPenalty
		case policy.OffRack:
			at.work *= 1 + s.sc.OffRackPenalty
		}
	}
	at.rate = speedOf(n.speed, t.job.spec.ParallelFraction, s.vcores, at.requested, at.granted)
	t.attempts = append(t.attempts, at)
	n.running = append(n.running, at)
	s.attempt[at.id] = at
	s.met.started(at)
	if s.net != nil && t.typ == models.ReduceTask {
		s.startFetch(at)
	}
	s.schedule(at)
	s.lastProgressS = now
}

func (s *clusterSim) localityOf(t *simTask, n *simNode) policy.Locality {
	rackLocal := false
	for _, r := range t.replicas {
		if r == n.idx {
			return policy.NodeLocal
		}
		rackLocal = rackLocal || s.nodes[r].rack == n.rack
	}
	if rackLocal {
		return policy.RackLocal
	}
	return policy.OffRack
}

func (s *clusterSim) activeJob(id string) *simJob {
	for _, j := range s.active {
		if j.spec.ID == id {
			return j
		}
	}
	return nil
}

// schedule (re)schedules the attempt's next milestone.
func (s *clusterSim) schedule(at *simAttempt) {
	s.eng.Cancel(at.handle)
	at.handle = Handle{}
	if at.waiting || at.rate <= 0 {
		return
	}
	target := at.work
	if ws := at.shuffleWork(); at.task.typ == models.ReduceTask && at.task.job.mapsDoneS < 0 && at.done < ws+1e-12 {
		target = ws
	}
	dt := math.Max(0, (target-at.done)/at.rate)
	at.handle = s.eng.Schedule(s.eng.Now()+dt, evMilestone, at.id)
}

// setGrant changes an attempt's grant and hence its rate.
func (s *clusterSim) setGrant(at *simAttempt, g models.Resources, now float64) {
	s.met.advance(s, now)
	at.sync(now)
	at.granted = g
	at.rate = speedOf(at.node.speed, at.task.job.spec.ParallelFraction, s.vcores, at.requested, at.granted)
	s.schedule(at)
}

// milestone handles an attempt reaching the end of its shuffle or its work.
func (s *clusterSim) milestone(id int) {
	at := s.attempt[id]
	if at == nil {
		return
	}
	now := s.eng.Now()
	at.sync(now)
	at.handle = Handle{}
	if at.done < at.work-1e-9*math.Max(1, at.work) {
		// End of the shuffle while maps are still running: wait for them.
		at.done = at.shuffleWork()
		at.waiting = true
		return
	}
	at.done = at.work
	s.finish(at)
}

// finish completes the attempt's task and kills its other attempts.
func (s *clusterSim) finish(at *simAttempt) {
	now := s.eng.Now()
	t := at.task
	j := t.job
	t.done, t.doneS = true, now
	t.completions++
	s.completed++
	s.remove(at)
	s.met.finished(at, true)
	for _, other := range t.attempts {
		if other != at && s.attempt[other.id] != nil {
			s.remove(other)
			s.met.killed(other)
		}
	}
	dur := now - at.startS
	k := t.typ - 1
	j.done[k]++
	j.durSum[k] += dur
	s.lastProgressS = now
	beat := ledger.Beat{Node: at.node.id, NowS: now, Finished: []int{at.id}, ReportOnly: true}
	if s.net != nil && t.typ == models.MapTask {
		s.mapOutput(t, at)
		beat.OutputMB = map[int]float64{at.id: t.outMB}
	}
	// Reported at once, as Hadoop's out-of-band heartbeat does.
	if _, err := s.ctl.Heartbeat(s.ctx, beat); err != nil && s.err == nil {
		s.err = fmt.Errorf("sim: completion of attempt %d on node %q at %v s: %w", at.id, at.node.id, now, err)
	}
	if t.typ == models.MapTask && j.done[0] == len(j.tasks[0]) {
		j.mapsDoneS = now
		for _, r := range j.tasks[1] {
			for _, ra := range r.attempts {
				if s.attempt[ra.id] != nil {
					if ra.fetch != nil {
						s.shuffleCheck(ra)
						continue
					}
					ra.sync(now)
					if ra.waiting {
						ra.waiting = false
						ra.lastS = now
					}
					s.schedule(ra)
				}
			}
		}
	}
	if j.done[0] == len(j.tasks[0]) && j.done[1] == len(j.tasks[1]) {
		s.stageDone(j)
	}
}

func (s *clusterSim) stageDone(j *simJob) {
	s.met.stageDone(j)
	j.stage++
	if j.stage < j.spec.Stages {
		s.startStage(j)
		return
	}
	j.finished, j.finishS = true, s.eng.Now()
	s.finished++
	if err := s.ctl.JobFinished(s.ctx, j.finishS, j.spec.ID); err != nil && s.err == nil {
		s.err = err
	}
	for i, a := range s.active {
		if a == j {
			s.active = append(s.active[:i], s.active[i+1:]...)
			break
		}
	}
	if s.opt.Progress != nil {
		s.opt.Progress(s.finished, len(s.jobs))
	}
}

// kill stops an attempt the scheduler killed; a task left without
// attempts becomes pending.
func (s *clusterSim) kill(n *simNode, id int) {
	at := s.attempt[id]
	if at == nil {
		s.diverged(n, "kill of attempt %d, which is not running", id)
		return
	}
	s.remove(at)
	s.met.killed(at)
	at.task.attempts = slices.DeleteFunc(at.task.attempts, func(o *simAttempt) bool { return o == at })
}

// remove takes an attempt off its node and out of the running set.
func (s *clusterSim) remove(at *simAttempt) {
	s.met.advance(s, s.eng.Now())
	s.eng.Cancel(at.handle)
	s.stopFetch(at)
	delete(s.attempt, at.id)
	n := at.node
	for i, o := range n.running {
		if o == at {
			n.running = append(n.running[:i], n.running[i+1:]...)
			break
		}
	}
}

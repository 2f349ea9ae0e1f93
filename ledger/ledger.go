package ledger

import (
	"fmt"
	"math"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Errors; match with errors.Is.
var (
	// ErrInvalid: a submission, report or event is malformed (the error
	// names the field and value).
	ErrInvalid = errkind.New(errkind.Invalid, "ledger: invalid input")
	// ErrUnknown: no such node, job or running attempt.
	ErrUnknown = errkind.New(errkind.NotFound, "ledger: unknown")
	// ErrExists: a job with that id is already active.
	ErrExists = errkind.New(errkind.Conflict, "ledger: already exists")
)

// Config is the cluster a ledger records.
type Config struct {
	// Cluster gives the resource names and the nodes with their capacities
	// and typed MRv1 slots (a node with MapSlots+ReduceSlots > 0 makes the
	// cluster slot-based).
	Cluster models.Cluster
	// SlowStart is the fraction of a stage's maps that must be done before
	// its reduces may start (Hadoop's
	// mapreduce.job.reduce.slowstart.completedmaps); in [0, 1].
	SlowStart float64
	// ReduceRamp limits a stage's started reduces to ⌈R·maps done/M⌉ (at
	// least 1) until its maps are done (YARN's MapReduce AM ramp-up).
	ReduceRamp bool
}

// JobSpec is a submitted job: what the executor knows when it submits.
type JobSpec struct {
	ID      string  `json:"id"`
	SubmitS float64 `json:"submit_s"`
	Queue   string  `json:"queue,omitempty"`
	// Weight is the fair-share weight (0: 1).
	Weight float64 `json:"weight,omitempty"`
	// Demand is each type's per-task request over the cluster's resources
	// (absent: nothing but a slot).
	Demand map[models.TaskType]models.Resources `json:"demand,omitempty"`
	// Stages run one after another (an iterative job has several).
	Stages []StageSpec `json:"stages"`
}

// Tasks counts the job's tasks over all its stages.
func (s *JobSpec) Tasks() int {
	n := 0
	for _, st := range s.Stages {
		n += len(st.Maps) + st.Reduces
	}
	return n
}

// StageSpec is one stage of a job.
type StageSpec struct {
	// Maps lists, for each map task, the nodes holding a replica of its
	// input block (empty: the map reads no local input).
	Maps    [][]string `json:"maps"`
	Reduces int        `json:"reduces"`
}

// Status is what a node reports of one of its running attempts.
type Status struct {
	Attempt  int          `json:"attempt"`
	Phase    models.Phase `json:"phase"`
	Progress float64      `json:"progress"`
	// FetchMBps is a reduce attempt's current fetch rate over the network
	// in MB/s, its copy phase's "at x MB/s" in Hadoop (0: not fetching
	// or unknown): what a reduce-placement stage learns the racks'
	// downlinks from.
	FetchMBps float64 `json:"fetch_mbps,omitempty"`
}

// Ledger is the record of one cluster. It is not safe for concurrent use.
type Ledger struct {
	cfg     Config
	dims    int
	slots   bool
	total   models.Resources
	racks   []models.Rack
	nodes   []*node
	nodeAt  map[string]*node
	active  []*job // submission order
	jobAt   map[string]*job
	attempt map[int]*attempt
	nextID  int
	// runningMaps counts the map attempts in attempt: while one runs, no
	// deadlock needs preemption (preempt.go), an O(1) test per heartbeat.
	runningMaps int
	tasks       int // Σ Tasks() over the active jobs
}

type node struct {
	id, rack              string
	capacity              models.Resources
	mapSlots, reduceSlots int
	running               []*attempt
	// view is the node's view while it is current (nil: rebuild).
	view *policy.NodeView
}

type job struct {
	spec     JobSpec
	demand   map[models.TaskType]models.Resources
	stage    int
	tasks    [2][]*task // current stage, by type-1
	done     [2]int
	assigned [2]int
	durSum   [2]float64
	// outputs are the finished maps' outputs of the stage, by node.
	outputs []policy.NodeOutput
	// view is the job's view while it is current (nil: rebuild);
	// runningStale: only its Running attempts' views changed.
	view         *policy.JobView
	runningStale bool
}

type task struct {
	job      *job
	typ      models.TaskType
	index    int
	pending  policy.PendingTask
	attempts []*attempt
	done     bool
	started  bool
}

type attempt struct {
	id                 int
	task               *task
	node               *node
	slot               models.TaskType
	startS             float64
	requested, granted models.Resources
	speculative        bool
	phase              models.Phase
	progress           float64
	fetchMBps          float64
	// view is the attempt's view while it is current (nil: rebuild).
	view *policy.AttemptView
}

// changed drops the attempt's view and marks the views that hold it.
func (a *attempt) changed() {
	a.view = nil
	a.node.view = nil
	a.task.job.runningStale = true
}

// New returns an empty ledger of the cluster.
func New(cfg Config) (*Ledger, error) {
	if err := cfg.Cluster.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if !(cfg.SlowStart >= 0 && cfg.SlowStart <= 1) {
		return nil, fmt.Errorf("%w: slow_start = %v: must be in [0, 1]", ErrInvalid, cfg.SlowStart)
	}
	l := &Ledger{cfg: cfg, dims: len(cfg.Cluster.Resources), nodeAt: map[string]*node{}, jobAt: map[string]*job{}, attempt: map[int]*attempt{}}
	l.total = cfg.Cluster.TotalCapacity()
	l.racks = cfg.Cluster.Racks()
	for _, n := range cfg.Cluster.Nodes {
		ln := &node{id: n.ID, rack: n.Rack, capacity: n.Capacity.Clone(), mapSlots: n.MapSlots, reduceSlots: n.ReduceSlots}
		if l.dims > 0 && ln.capacity == nil {
			ln.capacity = make(models.Resources, l.dims)
		}
		l.slots = l.slots || n.MapSlots+n.ReduceSlots > 0
		l.nodes = append(l.nodes, ln)
		l.nodeAt[n.ID] = ln
	}
	return l, nil
}

// Active is the number of active jobs.
func (l *Ledger) Active() int { return len(l.active) }

// Running is the number of running attempts.
func (l *Ledger) Running() int { return len(l.attempt) }

// Tasks is the number of tasks (all stages) of the active jobs: what the
// ledger holds in memory for them.
func (l *Ledger) Tasks() int { return l.tasks }

// Job returns the submission of active job id.
func (l *Ledger) Job(id string) (JobSpec, bool) {
	if j := l.jobAt[id]; j != nil {
		return j.spec, true
	}
	return JobSpec{}, false
}

// HasJob reports whether job id is active.
func (l *Ledger) HasJob(id string) bool { return l.jobAt[id] != nil }

// HasNode reports whether the cluster has node id.
func (l *Ledger) HasNode(id string) bool { return l.nodeAt[id] != nil }

// CheckJob validates a submission against the cluster without changing
// anything.
func (l *Ledger) CheckJob(spec *JobSpec) error {
	if spec.ID == "" {
		return fmt.Errorf("%w: job id is empty", ErrInvalid)
	}
	if l.jobAt[spec.ID] != nil {
		return fmt.Errorf("%w: job %q is active", ErrExists, spec.ID)
	}
	if math.IsNaN(spec.SubmitS) || math.IsInf(spec.SubmitS, 0) {
		return fmt.Errorf("%w: job %q: submit_s = %v", ErrInvalid, spec.ID, spec.SubmitS)
	}
	if !(spec.Weight >= 0) || math.IsInf(spec.Weight, 0) {
		return fmt.Errorf("%w: job %q: weight = %v: must be a finite number ≥ 0", ErrInvalid, spec.ID, spec.Weight)
	}
	if len(spec.Stages) == 0 {
		return fmt.Errorf("%w: job %q has no stage", ErrInvalid, spec.ID)
	}
	for tt, d := range spec.Demand {
		if !tt.Valid() {
			return fmt.Errorf("%w: job %q: demand of task type %d", ErrInvalid, spec.ID, tt)
		}
		if err := d.Validate(l.cfg.Cluster.Resources); err != nil {
			return fmt.Errorf("%w: job %q: %v demand: %w", ErrInvalid, spec.ID, tt, err)
		}
	}
	for s, st := range spec.Stages {
		if st.Reduces < 0 {
			return fmt.Errorf("%w: job %q: stages[%d].reduces = %d: must be ≥ 0", ErrInvalid, spec.ID, s, st.Reduces)
		}
		if len(st.Maps)+st.Reduces == 0 {
			return fmt.Errorf("%w: job %q: stages[%d] has no task", ErrInvalid, spec.ID, s)
		}
		for m, reps := range st.Maps {
			for _, id := range reps {
				if l.nodeAt[id] == nil {
					return fmt.Errorf("%w: job %q: stages[%d].maps[%d]: unknown node %q", ErrInvalid, spec.ID, s, m, id)
				}
			}
		}
	}
	return nil
}

// Submit makes a job active with its first stage's tasks pending.
func (l *Ledger) Submit(spec JobSpec) error {
	if err := l.CheckJob(&spec); err != nil {
		return err
	}
	if spec.Weight == 0 {
		spec.Weight = 1
	}
	j := &job{spec: spec, demand: map[models.TaskType]models.Resources{}}
	for _, tt := range []models.TaskType{models.MapTask, models.ReduceTask} {
		d := spec.Demand[tt]
		if d == nil && l.dims > 0 {
			d = make(models.Resources, l.dims)
		}
		j.demand[tt] = d
	}
	l.active = append(l.active, j)
	l.jobAt[spec.ID] = j
	l.tasks += spec.Tasks()
	l.startStage(j)
	return nil
}

// startStage creates the tasks of the job's current stage.
func (l *Ledger) startStage(j *job) {
	st := j.spec.Stages[j.stage]
	j.tasks = [2][]*task{make([]*task, len(st.Maps)), make([]*task, st.Reduces)}
	j.done, j.assigned, j.durSum = [2]int{}, [2]int{}, [2]float64{}
	j.outputs = nil
	j.view = nil
	for i, reps := range st.Maps {
		t := &task{job: j, typ: models.MapTask, index: i, pending: policy.PendingTask{Index: i}}
		for _, id := range reps {
			t.pending.PreferredNodes = append(t.pending.PreferredNodes, id)
			t.pending.PreferredRacks = appendUnique(t.pending.PreferredRacks, l.nodeAt[id].rack)
		}
		j.tasks[0][i] = t
	}
	for i := range st.Reduces {
		j.tasks[1][i] = &task{job: j, typ: models.ReduceTask, index: i, pending: policy.PendingTask{Index: i}}
	}
}

func appendUnique(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// slowStartReached: the stage's done maps reached the slow-start fraction.
func (j *job) slowStartReached(slowStart float64) bool {
	m := len(j.tasks[0])
	return m == 0 || float64(j.done[0]) >= slowStart*float64(m)
}

// reduceAllowance is how many reduces may be started or running.
func (j *job) reduceAllowance(ramp bool) int {
	r, m := len(j.tasks[1]), len(j.tasks[0])
	if !ramp || m == 0 || j.done[0] == m {
		return r
	}
	return max(1, int(math.Ceil(float64(r)*float64(j.done[0])/float64(m))))
}

// reducesInFlight counts the stage's reduces started and not done.
func (j *job) reducesInFlight() int {
	n := 0
	for _, t := range j.tasks[1] {
		if !t.done && len(t.attempts) > 0 {
			n++
		}
	}
	return n
}

// reduceStartable: slow start reached and the ramp allows one more reduce.
func (l *Ledger) reduceStartable(j *job) bool {
	return j.slowStartReached(l.cfg.SlowStart) && j.reducesInFlight() < j.reduceAllowance(l.cfg.ReduceRamp)
}

// used is what the node's attempts hold.
func (n *node) used(dims int) models.Occupancy {
	o := models.NewOccupancy(dims)
	for _, a := range n.running {
		o.Add(a.requested, a.granted, a.slot)
	}
	return o
}

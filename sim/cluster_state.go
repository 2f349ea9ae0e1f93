package sim

import (
	"math"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// The running state of the cluster simulator (see ClusterScenario for the
// model): the work and time of every task and attempt. Nothing here is
// visible to policies: they see the views of the simulator's ledger
// (clusterSim.led), which holds what a scheduler knows.

type simNode struct {
	idx                   int
	id, rack              string
	capacity              models.Resources
	mapSlots, reduceSlots int
	speed                 float64
	running               []*simAttempt
}

// used is what the node's attempts hold.
func (n *simNode) used(dims int) models.Occupancy {
	o := models.NewOccupancy(dims)
	for _, a := range n.running {
		o.Add(a.requested, a.granted, a.slot)
	}
	return o
}

type simJob struct {
	idx       int
	spec      *ClusterJob
	works     [][2][]float64
	submitted bool
	finished  bool
	finishS   float64
	stage     int
	tasks     [2][]*simTask // current stage, by type-1
	done      [2]int
	durSum    [2]float64
	// mapsDoneS is when the current stage's last map finished (-1 before).
	mapsDoneS float64
	// shuffleEndS is when a reducer of the current stage last ended its
	// shuffle over the network (0 before).
	shuffleEndS float64
	demand      map[models.TaskType]models.Resources
}

func (j *simJob) weight() float64 { return j.spec.Weight }

// slowStartReached: the stage's done maps reached the slow-start fraction.
func (j *simJob) slowStartReached(slowStart float64) bool {
	m := len(j.tasks[0])
	return m == 0 || float64(j.done[0]) >= slowStart*float64(m)
}

type simTask struct {
	job      *simJob
	typ      models.TaskType
	index    int
	work     float64
	replicas []int // node indices holding the input block (maps)
	// outNode and outMB: where a finished map's output is, and its size
	// (with a Network).
	outNode  int
	outMB    float64
	attempts []*simAttempt
	done     bool
	doneS    float64
	// completions counts successful completions (an invariant: exactly 1).
	completions int
}

type simAttempt struct {
	id          int
	task        *simTask
	node        *simNode
	slot        models.TaskType
	startS      float64
	requested   models.Resources
	granted     models.Resources
	speculative bool
	locality    policy.Locality
	// work is the attempt's total work (task work times the locality
	// factor); done is the part done at lastS; rate the current rate.
	work, done, rate, lastS float64
	waiting                 bool // a reduce at the end of its shuffle, waiting for maps
	handle                  Handle
	// fetch is a reduce's shuffle over the network (nil: none, the
	// shuffle is compute work).
	fetch *fetchState
}

// report is the attempt's progress at time now as its node reports it (the
// ledger keeps it as what the policies see until the next report).
func (a *simAttempt) report(now float64) ledger.Status {
	a.sync(now)
	ph, pr := a.phase()
	st := ledger.Status{Attempt: a.id, Phase: ph, Progress: pr}
	if a.fetch != nil {
		for _, f := range a.fetch.flows {
			st.FetchMBps += f.rate
		}
	}
	return st
}

// shuffleWork is the work of a reduce attempt's shuffle phase.
func (a *simAttempt) shuffleWork() float64 {
	if a.task.typ != models.ReduceTask || a.fetch != nil {
		return 0
	}
	return a.work * a.task.job.spec.ShuffleFraction
}

// sync advances the attempt's done work to time now.
func (a *simAttempt) sync(now float64) {
	if !a.waiting && now > a.lastS {
		a.done = math.Min(a.work, a.done+a.rate*(now-a.lastS))
		if a.task.typ == models.ReduceTask && a.task.job.mapsDoneS < 0 {
			a.done = math.Min(a.done, a.shuffleWork())
		}
	}
	a.lastS = now
}

// phase returns the attempt's phase and the fraction of it done.
func (a *simAttempt) phase() (models.Phase, float64) {
	if a.task.typ == models.MapTask {
		return models.PhaseMap, clamp01(a.done / a.work)
	}
	if a.fetch != nil && a.waiting {
		return a.shufflePhase()
	}
	ws := a.shuffleWork()
	if a.done < ws || (a.task.job.mapsDoneS < 0) {
		// Hadoop's copy progress is the fraction of map outputs fetched:
		// bounded by the maps done.
		j := a.task.job
		frac := 1.0
		if m := len(j.tasks[0]); m > 0 {
			frac = float64(j.done[0]) / float64(m)
		}
		if ws == 0 {
			return models.PhaseShuffle, frac
		}
		return models.PhaseShuffle, math.Min(clamp01(a.done/ws), frac)
	}
	rest := (a.work - ws) / 2
	if rest <= 0 {
		return models.PhaseReduce, 1
	}
	if a.done < ws+rest {
		return models.PhaseSort, clamp01((a.done - ws) / rest)
	}
	return models.PhaseReduce, clamp01((a.done - ws - rest) / rest)
}

func clamp01(x float64) float64 { return math.Min(1, math.Max(0, x)) }

// speedOf is the rate of an attempt (see ClusterScenario): node speed times
// Amdahl's speed-up 1/((1−p) + p·r/g) of granted vcores g over requested r.
func speedOf(nodeSpeed, p float64, vcores int, requested, granted models.Resources) float64 {
	if vcores < 0 || requested[vcores] <= 0 {
		return nodeSpeed
	}
	g := float64(granted[vcores])
	if g <= 0 {
		return 0
	}
	r := float64(requested[vcores])
	return nodeSpeed / ((1 - p) + p*r/g)
}

package sim

import (
	"math"
	"slices"

	"github.com/optd/optd/models"
)

// The shuffle over the network (ClusterScenario.Network): which map
// outputs a reduce attempt fetches, when its flows start, and when its
// shuffle ends. The flows' rates are flowNet's.

// evNetwork: the earliest active flow completes.
const evNetwork = evSample + 1

// fetchState is what a reduce attempt fetches over the network.
type fetchState struct {
	// flows are its active flows, one per source node, in arrival order.
	flows []*flow
	// shareMB is the data it has been given to fetch so far (its share of
	// the finished maps' outputs, local ones included).
	shareMB float64
}

// startFetch begins a reduce attempt's shuffle over the network: its
// compute work is the sort and reduce, and it waits until it has fetched
// its share of every map's output.
func (s *clusterSim) startFetch(at *simAttempt) {
	at.work *= 1 - at.task.job.spec.ShuffleFraction
	at.fetch = &fetchState{}
	at.waiting = true
	for _, m := range at.task.job.tasks[0] {
		if m.done {
			s.fetchFrom(at, m)
		}
	}
	s.shuffleCheck(at)
}

// fetchFrom gives reduce attempt at its share 1/R of finished map m's
// output, fetched from the node that ran m.
func (s *clusterSim) fetchFrom(at *simAttempt, m *simTask) {
	share := m.outMB / float64(len(at.task.job.tasks[1]))
	at.fetch.shareMB += share
	if m.outNode == at.node.idx || share <= 0 {
		return // a local read
	}
	now := s.eng.Now()
	for _, f := range at.fetch.flows {
		if f.src == m.outNode {
			s.net.grow(now, f, share)
			f.total += share
			return
		}
	}
	f := s.net.add(now, m.outNode, at, share)
	f.total = share
	at.fetch.flows = append(at.fetch.flows, f)
}

// mapOutput records finished map t's output on the node of attempt at
// and hands each running reduce attempt of its job its share.
func (s *clusterSim) mapOutput(t *simTask, at *simAttempt) {
	t.outNode, t.outMB = at.node.idx, t.job.spec.MapOutputMB
	for _, r := range t.job.tasks[1] {
		for _, ra := range r.attempts {
			if s.attempt[ra.id] != nil && ra.fetch != nil {
				s.fetchFrom(ra, t)
			}
		}
	}
}

// shuffleCheck ends a reduce attempt's shuffle once every map of its stage
// has finished and its flows are done: its sort and reduce start.
func (s *clusterSim) shuffleCheck(at *simAttempt) {
	if at.fetch == nil || !at.waiting || at.task.job.mapsDoneS < 0 || len(at.fetch.flows) > 0 {
		return
	}
	at.waiting = false
	at.lastS = s.eng.Now()
	at.task.job.shuffleEndS = at.lastS
	s.schedule(at)
}

// stopFetch drops the flows of an attempt that stops (killed or done).
func (s *clusterSim) stopFetch(at *simAttempt) {
	if at.fetch == nil {
		return
	}
	for _, f := range at.fetch.flows {
		s.net.drop(s.eng.Now(), f)
		s.met.fetched(s, f)
	}
	at.fetch.flows = nil
}

// networkEvent completes the flows due now.
func (s *clusterSim) networkEvent() {
	now := s.eng.Now()
	s.netHandle = Handle{}
	for _, f := range s.net.done(now) {
		s.net.drop(now, f)
		s.met.fetched(s, f)
		at := f.owner
		at.fetch.flows = slices.DeleteFunc(at.fetch.flows, func(o *flow) bool { return o == f })
		s.shuffleCheck(at)
	}
}

// settleNetwork recomputes the flows' rates after the flows changed and
// schedules the next completion.
func (s *clusterSim) settleNetwork() {
	if s.net == nil || !s.net.dirty && !s.net.timing {
		return
	}
	var t float64
	if s.net.dirty {
		s.net.allocate()
		t = s.net.next
	} else {
		t = s.net.nextDone()
	}
	s.net.timing = false
	s.eng.Cancel(s.netHandle)
	s.netHandle = Handle{}
	if !math.IsInf(t, 1) {
		s.netHandle = s.eng.Schedule(math.Max(t, s.eng.Now()), evNetwork, 0)
	}
}

// shufflePhase is the copy progress of a reduce attempt fetching over the
// network: the fraction of its share of all the stage's map outputs it
// has, at most the fraction of maps done (Hadoop's copy progress).
func (a *simAttempt) shufflePhase() (models.Phase, float64) {
	j := a.task.job
	left := 0.0
	for _, f := range a.fetch.flows {
		left += f.left
	}
	m := len(j.tasks[0])
	if m == 0 {
		return models.PhaseShuffle, 1
	}
	frac := float64(j.done[0]) / float64(m)
	want := float64(m) * j.spec.MapOutputMB / float64(len(j.tasks[1]))
	if want <= 0 {
		return models.PhaseShuffle, frac
	}
	return models.PhaseShuffle, math.Min(frac, clamp01((a.fetch.shareMB-left)/want))
}

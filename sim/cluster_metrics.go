package sim

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// ClusterResult is what a cluster run measured (docs/formats.md#simulate-output; times in
// simulated seconds). The JSON field names are the contract's.
type ClusterResult struct {
	MakespanS     float64 `json:"makespan_s"`
	MeanResponseS float64 `json:"mean_response_s"`
	// Utilization is the time-average over [first submission, makespan] of
	// the granted share of each resource, under the name the cluster
	// declares it with ("memory_mb", "vcores") and, on a slot cluster, of the
	// occupied map and reduce slots ("map_slots", "reduce_slots").
	Utilization map[string]float64 `json:"utilization"`
	Locality    Locality           `json:"locality"`
	Speculative Speculative        `json:"speculative"`
	Fairness    Fairness           `json:"fairness"`
	Jobs        []JobOutcome       `json:"jobs"`
	// Events is the number of engine events processed; Rejected the
	// policy actions the simulator refused (they did not fit or named a
	// task that could not start).
	Events   uint64 `json:"events"`
	Rejected int    `json:"rejected_actions"`
	// PreemptedReducers counts the reducers the scheduler killed to break
	// a deadlock of early reducers and waiting maps (absent when none;
	// see ledger.PreemptReason).
	PreemptedReducers int `json:"preempted_reducers,omitempty"`
	// Vetoes are the candidates the policy's filters and gates refused,
	// counted by stage, job and task type (only with
	// ClusterOptions.Explain).
	Vetoes []VetoCount `json:"vetoes,omitempty"`
	// Shuffle is the data the reducers fetched over the network (only with
	// ClusterScenario.Network).
	Shuffle *ShuffleTraffic `json:"shuffle,omitempty"`
	// Series is the utilization time series (see WriteCSV); not in JSON.
	Series *UtilizationSeries `json:"-"`
}

// ShuffleTraffic is the data reducers fetched over the network, in MB:
// all of it, and the part that crossed racks (rack uplinks). Local reads
// are not counted; a killed attempt's partial fetch is.
type ShuffleTraffic struct {
	NetworkMB   float64 `json:"network_mb"`
	CrossRackMB float64 `json:"cross_rack_mb"`
}

// Locality is the share of map attempts with input started node-local,
// rack-local and off-rack (0 each when no map had input).
type Locality struct {
	NodeLocal float64 `json:"node_local"`
	RackLocal float64 `json:"rack_local"`
	OffRack   float64 `json:"off_rack"`
}

// Speculative counts speculative copies: launched, useful (the copy
// finished its task first) and wasted (killed or beaten by another attempt).
type Speculative struct {
	Launched int `json:"launched"`
	Useful   int `json:"useful"`
	Wasted   int `json:"wasted"`
}

// Fairness is the time-average, over samples every SampleS with at least
// two jobs waiting for resources, of the mean absolute deviation
// (1/n)·Σ_i |s_i − w_i/Σw| between each such job's share s_i of the
// cluster (its dominant granted share of all resources, normalized so the
// shares sum to the total used; slot share on an MRv1 cluster) and its
// weighted fair share of what is in use. 0 is perfectly fair.
type Fairness struct {
	MeanShareDeviation float64 `json:"mean_share_deviation"`
	Samples            int     `json:"samples"`
}

// JobOutcome is one job's submission and finish.
type JobOutcome struct {
	ID      string  `json:"id"`
	SubmitS float64 `json:"submit_s"`
	FinishS float64 `json:"finish_s"`
	// MapsEndS is when the job's last stage's last map finished, and
	// ShuffleEndS when a reducer of it last ended its shuffle (its last
	// fetch done, the maps all finished): the phases of a job's time, only
	// with the network (ClusterScenario.Network).
	MapsEndS    float64 `json:"maps_end_s,omitempty"`
	ShuffleEndS float64 `json:"shuffle_end_s,omitempty"`
}

// UtilizationSeries is the utilization of each resource sampled every
// SampleS: Values[k][i] is the share of Names[k] in use at TimesS[i].
type UtilizationSeries struct {
	Names  []string
	TimesS []float64
	Values [][]float64
}

// WriteCSV writes the series as CSV: a header "time_s,NAME,..." and one
// row per sample.
func (u *UtilizationSeries) WriteCSV(w io.Writer) error {
	var b strings.Builder
	b.WriteString("time_s")
	for _, n := range u.Names {
		b.WriteString("," + n)
	}
	b.WriteByte('\n')
	for i, t := range u.TimesS {
		b.WriteString(strconv.FormatFloat(t, 'f', 3, 64))
		for k := range u.Names {
			b.WriteByte(',')
			b.WriteString(strconv.FormatFloat(u.Values[k][i], 'f', 6, 64))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// clusterMetrics accumulates a run's figures.
type clusterMetrics struct {
	names   []string // series names: resources, then slots
	area    []float64
	lastT   float64
	startT  float64
	series  UtilizationSeries
	local   [4]int
	spec    Speculative
	fairSum float64
	fairN   int
	shuffle ShuffleTraffic
	// scratch of current
	cur     []float64
	granted models.Resources
}

func newClusterMetrics(s *clusterSim) *clusterMetrics {
	m := &clusterMetrics{startT: math.Inf(1)}
	for _, n := range s.sc.Cluster.Resources {
		m.names = append(m.names, utilizationName(n))
	}
	if s.slots {
		m.names = append(m.names, "map_slots", "reduce_slots")
	}
	m.area = make([]float64, len(m.names))
	m.cur = make([]float64, len(m.names))
	m.granted = make(models.Resources, len(s.sc.Cluster.Resources))
	m.series = UtilizationSeries{Names: m.names, Values: make([][]float64, len(m.names))}
	for _, j := range s.sc.Jobs {
		m.startT = math.Min(m.startT, j.SubmitS)
	}
	m.lastT = m.startT
	return m
}

// utilizationName is the name a resource's utilization is reported under:
// the name the cluster declares, so that a user finds what they wrote.
func utilizationName(resource string) string { return resource }

// current returns the share of each series quantity in use now.
func (m *clusterMetrics) current(s *clusterSim) []float64 {
	out := m.cur[:len(m.names)]
	granted := m.granted[:s.dims]
	clear(granted)
	var um, ur, tm, tr int
	for _, n := range s.nodes {
		for _, a := range n.running {
			for p, v := range a.granted {
				granted[p] += v
			}
			switch a.slot {
			case models.MapTask:
				um++
			case models.ReduceTask:
				ur++
			}
		}
		tm += n.mapSlots
		tr += n.reduceSlots
	}
	for p := range s.dims {
		if s.total[p] > 0 {
			out[p] = float64(granted[p]) / float64(s.total[p])
		}
	}
	if s.slots {
		if tm > 0 {
			out[s.dims] = float64(um) / float64(tm)
		}
		if tr > 0 {
			out[s.dims+1] = float64(ur) / float64(tr)
		}
	}
	return out
}

// advance integrates utilization up to time t (called before any change).
func (m *clusterMetrics) advance(s *clusterSim, t float64) {
	if t <= m.lastT {
		return
	}
	cur := m.current(s)
	for k, v := range cur {
		m.area[k] += v * (t - m.lastT)
	}
	m.lastT = t
}

// sample records the series and a fairness sample.
func (m *clusterMetrics) sample(s *clusterSim) {
	if s.eng.Now() < m.startT {
		return
	}
	cur := m.current(s)
	m.series.TimesS = append(m.series.TimesS, s.eng.Now())
	// cur is scratch: the series copies the values.
	for k, v := range cur {
		m.series.Values[k] = append(m.series.Values[k], v)
	}
	m.fairness(s)
}

// fairness adds one sample of the share deviation among jobs that have
// pending tasks (jobs that want no more are not owed a share).
func (m *clusterMetrics) fairness(s *clusterSim) {
	var shares, weights []float64
	for _, j := range s.active {
		if !s.hasPending(j) {
			continue
		}
		sh := 0.0
		for _, t := range j.tasks {
			for _, task := range t {
				for _, a := range task.attempts {
					if s.attempt[a.id] == nil {
						continue
					}
					if s.dims > 0 {
						sh += a.granted.DominantShare(s.total)
					} else {
						sh++
					}
				}
			}
		}
		shares = append(shares, sh)
		weights = append(weights, j.weight())
	}
	if len(shares) < 2 {
		return
	}
	var used, wsum float64
	for i := range shares {
		used += shares[i]
		wsum += weights[i]
	}
	if used == 0 || wsum == 0 {
		return
	}
	dev := 0.0
	for i := range shares {
		dev += math.Abs(shares[i]/used - weights[i]/wsum)
	}
	m.fairSum += dev / float64(len(shares))
	m.fairN++
}

// hasPending reports whether the job has a task waiting to start.
func (s *clusterSim) hasPending(j *simJob) bool {
	for _, t := range j.tasks[0] {
		if !t.done && len(t.attempts) == 0 {
			return true
		}
	}
	if !j.slowStartReached(s.sc.SlowStart) {
		return false
	}
	for _, t := range j.tasks[1] {
		if !t.done && len(t.attempts) == 0 {
			return true
		}
	}
	return false
}

func (m *clusterMetrics) started(at *simAttempt) {
	if at.speculative {
		m.spec.Launched++
	}
	if at.locality != policy.LocalityNone {
		m.local[at.locality]++
	}
}

func (m *clusterMetrics) finished(at *simAttempt, _ bool) {
	if at.speculative {
		m.spec.Useful++
	}
}

func (m *clusterMetrics) killed(at *simAttempt) {
	if at.speculative {
		m.spec.Wasted++
	}
}

func (m *clusterMetrics) stageDone(*simJob) {}

// fetched counts what flow f carried (it stops now).
func (m *clusterMetrics) fetched(s *clusterSim, f *flow) {
	mb := f.total - f.left
	m.shuffle.NetworkMB += mb
	if s.net.crossRack(f.src, f.owner.node.idx) {
		m.shuffle.CrossRackMB += mb
	}
}

// result assembles the run's figures.
func (s *clusterSim) result() *ClusterResult {
	m := s.met
	end := s.eng.Now()
	m.advance(s, end)
	r := &ClusterResult{Utilization: map[string]float64{}, Speculative: m.spec, Events: s.eng.Processed(), Rejected: s.rejected,
		PreemptedReducers: s.preempted}
	if s.opt.Explain {
		r.Vetoes = s.vetoes.list()
	}
	if s.net != nil {
		sh := m.shuffle
		r.Shuffle = &sh
	}
	span := end - m.startT
	for k, n := range m.names {
		if span > 0 {
			r.Utilization[n] = m.area[k] / span
		}
	}
	var resp float64
	for _, j := range s.jobs {
		o := JobOutcome{ID: j.spec.ID, SubmitS: j.spec.SubmitS, FinishS: j.finishS}
		if s.net != nil {
			o.MapsEndS, o.ShuffleEndS = j.mapsDoneS, j.shuffleEndS
		}
		r.Jobs = append(r.Jobs, o)
		resp += j.finishS - j.spec.SubmitS
		r.MakespanS = math.Max(r.MakespanS, j.finishS)
	}
	r.MakespanS -= m.startT
	r.MeanResponseS = resp / float64(len(s.jobs))
	if tot := m.local[policy.NodeLocal] + m.local[policy.RackLocal] + m.local[policy.OffRack]; tot > 0 {
		r.Locality = Locality{
			NodeLocal: float64(m.local[policy.NodeLocal]) / float64(tot),
			RackLocal: float64(m.local[policy.RackLocal]) / float64(tot),
			OffRack:   float64(m.local[policy.OffRack]) / float64(tot),
		}
	}
	if m.fairN > 0 {
		r.Fairness = Fairness{MeanShareDeviation: m.fairSum / float64(m.fairN), Samples: m.fairN}
	}
	r.Series = &m.series
	return r
}

// checkInvariants verifies the state after an event (tests).
func (s *clusterSim) checkInvariants() error {
	for _, n := range s.nodes {
		o := n.used(s.dims)
		if s.dims > 0 && (!o.Requested.Fits(n.capacity) || !o.Granted.Fits(n.capacity)) {
			return fmt.Errorf("%w at %.3f s: node %s over capacity: requested %v, granted %v, capacity %v", ErrInvariant, s.eng.Now(), n.id, o.Requested, o.Granted, n.capacity)
		}
		if s.slots && (o.MapSlots > n.mapSlots || o.ReduceSlots > n.reduceSlots) {
			return fmt.Errorf("%w at %.3f s: node %s runs %d/%d map/reduce attempts in %d/%d slots", ErrInvariant, s.eng.Now(), n.id, o.MapSlots, o.ReduceSlots, n.mapSlots, n.reduceSlots)
		}
	}
	for _, j := range s.jobs {
		if !j.submitted || j.finished {
			continue
		}
		for _, t := range j.tasks[1] {
			if t.done && (j.mapsDoneS < 0 || t.doneS < j.mapsDoneS) {
				return fmt.Errorf("%w at %.3f s: reduce %d of job %s finished before the stage's maps", ErrInvariant, s.eng.Now(), t.index, j.spec.ID)
			}
		}
		for _, ts := range j.tasks {
			for _, t := range ts {
				if t.completions > 1 {
					return fmt.Errorf("%w: task %s/%v#%d completed %d times", ErrInvariant, j.spec.ID, t.typ, t.index, t.completions)
				}
			}
		}
	}
	return nil
}

// checkFinal verifies the end state: every job finished, nothing running.
func (s *clusterSim) checkFinal() error {
	if len(s.attempt) != 0 {
		return fmt.Errorf("%w: %d attempts still running after the last job finished", ErrInvariant, len(s.attempt))
	}
	want := 0
	for _, j := range s.sc.Jobs {
		want += j.Stages * (j.Maps + j.Reduces)
	}
	if s.completed != want {
		return fmt.Errorf("%w: %d task completions, want one per task (%d)", ErrInvariant, s.completed, want)
	}
	for _, j := range s.jobs {
		if !j.finished || j.stage != j.spec.Stages {
			return fmt.Errorf("%w: job %s not finished (stage %d of %d)", ErrInvariant, j.spec.ID, j.stage, j.spec.Stages)
		}
	}
	return nil
}

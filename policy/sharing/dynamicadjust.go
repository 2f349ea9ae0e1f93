package sharing

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// DynamicAdjust is dynamic resource adjustment for skewed tasks (Liu, Khan,
// Chen, Liu, Gong, IEICE Trans. Inf. & Syst. 2016, §3).
//
// Skew detection (§3.2). The remaining time of an attempt in phase k with
// the fraction p of it done is phase-aware:
//
//	remaining = e_k·(1 − p)/p + Σ_{k' > k} D̄_{k'}
//
// with e_k the time spent in phase k (its own rate for the current phase)
// and D̄_{k'} the mean duration of phase k' over the job's finished attempts
// of the type (the "average progress rates calculated from finished
// tasks"). While p = 0 the current phase's mean duration is used; a phase
// with no history falls back to LATE's estimate for the score it spans.
// estimatedDuration = elapsed + remaining. An attempt is a candidate when
// estimatedDuration > θ_slow · averageDuration, averageDuration being the
// job's mean finished duration of the type; the text's "greater than the
// average by θ_slow" is read as a ratio, and θ_slow defaults to 1.5, the
// ratio the paper itself uses to label a task skewed (§4.1, after Chen et
// al.). Mitigation starts only once MinDoneFraction (the paper: 10%) of the
// job's tasks of the type have finished, so the averages exist.
//
// Skew mitigation (§3.3). Among the candidates on the heartbeating node the
// one with the greatest remaining time is mitigated first (at most
// MaxPerHeartbeat new ones per heartbeat): its CPU grows to
// ⌈estimatedDuration/averageDuration · Alloc_old^cpu⌉, within the node's
// free vcores; memory is never changed (a JVM heap cannot grow). A
// mitigated attempt keeps its grant ("guaranteeing their resource
// allocation"): it is re-issued on every heartbeat, reduced only when the
// node lacks the vcores.
//
// Phase boundaries are not reported by a heartbeat; they are placed by
// linear interpolation between the two observations around a phase change
// (at equal rates, where the progress units left and done meet).
type DynamicAdjust struct {
	ThetaSlow       float64
	MinDoneFraction float64
	MaxPerHeartbeat int

	track     map[int]*phaseTrack
	phaseMean map[phaseKey]*meanAcc
	target    map[int]int64 // mitigated attempt → its vcores
	calls     int
}

type phaseTrack struct {
	t        models.TaskType
	job      string
	k        int       // current phase index
	progress float64   // at lastS
	lastS    float64   // last observation
	startK   float64   // start time of phase k
	done     []float64 // durations of earlier phases (NaN: unknown)
}

type phaseKey struct {
	job string
	t   models.TaskType
	k   int
}

type meanAcc struct {
	sum float64
	n   int
}

var _ policy.Sharer = (*DynamicAdjust)(nil)
var _ policy.Observer = (*DynamicAdjust)(nil)
var _ policy.Tunable = (*DynamicAdjust)(nil)
var _ policy.Stateful = (*DynamicAdjust)(nil)

// NewDynamicAdjust returns DynamicAdjust with θ_slow = 1.5, 10% and one new
// mitigation per heartbeat.
func NewDynamicAdjust() *DynamicAdjust {
	return &DynamicAdjust{ThetaSlow: 1.5, MinDoneFraction: 0.1, MaxPerHeartbeat: 1,
		track: map[int]*phaseTrack{}, phaseMean: map[phaseKey]*meanAcc{}, target: map[int]int64{}}
}

// Name implements policy.Plugin.
func (*DynamicAdjust) Name() string { return NameDynamicAdjust }

func (d *DynamicAdjust) tunable() policy.ParamSet {
	return policy.ParamSet{
		policy.FloatParam(&d.ThetaSlow, policy.Param{Name: "theta_slow", Default: 1.5, Min: 1, Max: 5, Doc: "θ_slow: estimatedDuration/averageDuration above which an attempt is skewed"}),
		policy.FloatParam(&d.MinDoneFraction, policy.Param{Name: "min_done_fraction", Default: 0.1, Min: 0, Max: 1, Doc: "finished fraction of the job's tasks before mitigation starts"}),
		policy.IntParam(&d.MaxPerHeartbeat, policy.Param{Name: "max_per_heartbeat", Default: 1, Min: 1, Max: 100, Doc: "new mitigations per node heartbeat"}),
	}
}

// Params implements policy.Tunable.
func (d *DynamicAdjust) Params() []policy.Param { return d.tunable().Params() }

// SetParam implements policy.Tunable.
func (d *DynamicAdjust) SetParam(name string, v float64) error {
	return d.tunable().Set(NameDynamicAdjust, name, v)
}

// observe updates the phase tracks of the heartbeating node's attempts:
// an attempt's progress is reported by its own node's heartbeat, as a
// TaskTracker/NodeManager reports it. Every sweepEvery calls the tracks of
// attempts no longer running (killed; finished ones are dropped by
// TaskFinished) are dropped.
func (d *DynamicAdjust) observe(c *policy.ClusterView, n *policy.NodeView) {
	for _, a := range n.Running {
		d.observeAttempt(c.NowS, a)
	}
	d.calls++
	if d.calls%sweepEvery != 0 {
		return
	}
	seen := map[int]bool{}
	for _, j := range c.Jobs {
		for _, a := range j.Running {
			seen[a.ID] = true
		}
	}
	for id := range d.track {
		if !seen[id] {
			delete(d.track, id)
			delete(d.target, id)
		}
	}
}

// sweepEvery is how many heartbeats pass between sweeps of stale tracks.
const sweepEvery = 1024

func (d *DynamicAdjust) observeAttempt(now float64, a *policy.AttemptView) {
	phases := a.Type.Phases()
	k := slices.Index(phases, a.Phase)
	if k < 0 {
		return
	}
	tr, ok := d.track[a.ID]
	if !ok {
		tr = &phaseTrack{t: a.Type, job: a.Job, k: k, progress: a.Progress, lastS: now, startK: a.StartS}
		for range k {
			tr.done = append(tr.done, math.NaN())
		}
		if k > 0 && a.Score > 0 {
			// first seen past its first phase: assume a uniform score rate
			tr.startK = a.StartS + (now-a.StartS)*(float64(k)/float64(len(phases)))/a.Score
		}
		d.track[a.ID] = tr
		return
	}
	if k > tr.k {
		// progress units between the observations: the rest of phase tr.k,
		// the phases skipped, and the part of k done; equal time per unit.
		units := (1 - tr.progress) + float64(k-tr.k-1) + a.Progress
		tau := 0.0
		if units > 0 {
			tau = (now - tr.lastS) / units
		}
		end := tr.lastS + (1-tr.progress)*tau
		tr.done = append(tr.done, end-tr.startK)
		for range k - tr.k - 1 {
			tr.done = append(tr.done, tau)
			end += tau
		}
		tr.k, tr.startK = k, end
	}
	tr.progress, tr.lastS = a.Progress, now
}

// TaskFinished implements Observer: the attempt's phase durations join the
// job's per-phase means.
func (d *DynamicAdjust) TaskFinished(c *policy.ClusterView, a *policy.AttemptView, _ float64) {
	tr, ok := d.track[a.ID]
	if !ok {
		return
	}
	durs := append(slices.Clone(tr.done), c.NowS-tr.startK)
	for k, v := range durs {
		if math.IsNaN(v) || v < 0 {
			continue
		}
		key := phaseKey{tr.job, tr.t, k}
		m := d.phaseMean[key]
		if m == nil {
			m = &meanAcc{}
			d.phaseMean[key] = m
		}
		m.sum += v
		m.n++
	}
	delete(d.track, a.ID)
	delete(d.target, a.ID)
}

// Remaining is the phase-aware remaining time of attempt a (see the type's
// comment); it needs the attempt to have been observed.
func (d *DynamicAdjust) Remaining(now float64, a *policy.AttemptView) float64 {
	tr, ok := d.track[a.ID]
	if !ok {
		return a.TimeLeft(now)
	}
	n := len(a.Type.Phases())
	late := func(units float64) float64 { // LATE's estimate for `units` phases
		r := a.ProgressRate(now)
		if r <= 0 {
			return math.Inf(1)
		}
		return units / float64(n) / r
	}
	var rem float64
	switch e := now - tr.startK; {
	case a.Progress > 0 && e > 0:
		rem = e * (1 - a.Progress) / a.Progress
	case d.phaseMean[phaseKey{a.Job, a.Type, tr.k}] != nil:
		m := d.phaseMean[phaseKey{a.Job, a.Type, tr.k}]
		rem = math.Max(0, m.sum/float64(m.n)-e)
	default:
		rem = late(1 - a.Progress)
	}
	for k := tr.k + 1; k < n; k++ {
		if m := d.phaseMean[phaseKey{a.Job, a.Type, k}]; m != nil {
			rem += m.sum / float64(m.n)
		} else {
			rem += late(1)
		}
	}
	return rem
}

// Share implements policy.Sharer.
func (d *DynamicAdjust) Share(hb *policy.Heartbeat) []policy.Action {
	c := hb.Cluster
	d.observe(c, hb.Node)
	v := c.Resources.Index(models.ResourceVCores)
	if v < 0 || len(hb.Free) == 0 {
		return nil
	}
	free := max(hb.Free[v], 0)
	var out []policy.Action
	grant := func(a *policy.AttemptView, cpu int64, why string) {
		extra := min(cpu-a.Requested[v], free)
		if extra <= 0 {
			return
		}
		free -= extra
		r := a.Requested.Clone()
		r[v] += extra
		out = append(out, policy.Action{Kind: policy.ActionAdjust, Job: a.Job, Type: a.Type, Task: a.Task, Attempt: a.ID, Node: hb.Node.ID, Resources: r, Reason: why})
	}
	type cand struct {
		a        *policy.AttemptView
		est, avg float64
		rem      float64
	}
	var cands []cand
	running := liveAttempts(hb)
	for _, a := range running {
		if cpu, ok := d.target[a.ID]; ok {
			grant(a, cpu, fmt.Sprintf("%s: keep attempt %d's %d vcores (mitigated skew)", NameDynamicAdjust, a.ID, cpu))
			continue
		}
		j := c.Job(a.Job)
		if j == nil || !d.started(j, a.Type) {
			continue
		}
		avg := j.MeanDurationS(a.Type)
		rem := d.Remaining(c.NowS, a)
		est := c.NowS - a.StartS + rem
		if avg > 0 && !math.IsInf(est, 1) && est > d.ThetaSlow*avg {
			cands = append(cands, cand{a, est, avg, rem})
		}
	}
	slices.SortStableFunc(cands, func(x, y cand) int { return cmp.Or(cmp.Compare(y.rem, x.rem), cmp.Compare(x.a.ID, y.a.ID)) })
	for _, cd := range cands[:min(len(cands), d.MaxPerHeartbeat)] {
		old := cd.a.Requested[v]
		if cd.a.Granted != nil {
			old = max(old, cd.a.Granted[v])
		}
		cpu := int64(math.Ceil(cd.est / cd.avg * float64(old)))
		d.target[cd.a.ID] = cpu
		grant(cd.a, cpu, fmt.Sprintf("%s: attempt %d skewed: estimatedDuration %.1fs > θ_slow %g × averageDuration %.1fs (%.1fs left); vcores %d → ⌈%.2f × %d⌉ = %d",
			NameDynamicAdjust, cd.a.ID, cd.est, d.ThetaSlow, cd.avg, cd.rem, old, cd.est/cd.avg, old, cpu))
	}
	return out
}

// started reports whether enough of the job's tasks of type t finished.
func (d *DynamicAdjust) started(j *policy.JobView, t models.TaskType) bool {
	done, total := j.MapsDone, j.MapsTotal
	if t == models.ReduceTask {
		done, total = j.ReducesDone, j.ReducesTotal
	}
	return total > 0 && float64(done) >= d.MinDoneFraction*float64(total) && done > 0
}

// daState is the snapshot of DynamicAdjust: the phase tracks of the
// attempts it observes, the per-phase means of finished ones, the
// mitigated attempts' vcores and the sweep counter.
type daState struct {
	Tracks    []trackState `json:"tracks"`
	PhaseMean []meanState  `json:"phase_means"`
	Target    []targetCPU  `json:"targets"`
	Calls     int          `json:"calls"`
}

type trackState struct {
	Attempt  int             `json:"attempt"`
	Type     models.TaskType `json:"type"`
	Job      string          `json:"job"`
	K        int             `json:"k"`
	Progress float64         `json:"progress"`
	LastS    float64         `json:"last_s"`
	StartK   float64         `json:"start_k"`
	// Done are the earlier phases' durations, null where unknown (NaN).
	Done []*float64 `json:"done"`
}

type meanState struct {
	Job  string          `json:"job"`
	Type models.TaskType `json:"type"`
	K    int             `json:"k"`
	Sum  float64         `json:"sum"`
	N    int             `json:"n"`
}

type targetCPU struct {
	Attempt int   `json:"attempt"`
	VCores  int64 `json:"vcores"`
}

// Snapshot implements policy.Stateful.
func (d *DynamicAdjust) Snapshot() ([]byte, error) {
	st := daState{Calls: d.calls, Tracks: []trackState{}, PhaseMean: []meanState{}, Target: []targetCPU{}}
	for id, tr := range d.track {
		ts := trackState{Attempt: id, Type: tr.t, Job: tr.job, K: tr.k, Progress: tr.progress, LastS: tr.lastS, StartK: tr.startK}
		for _, v := range tr.done {
			if math.IsNaN(v) {
				ts.Done = append(ts.Done, nil)
			} else {
				ts.Done = append(ts.Done, &v)
			}
		}
		st.Tracks = append(st.Tracks, ts)
	}
	slices.SortFunc(st.Tracks, func(a, b trackState) int { return cmp.Compare(a.Attempt, b.Attempt) })
	for k, m := range d.phaseMean {
		st.PhaseMean = append(st.PhaseMean, meanState{k.job, k.t, k.k, m.sum, m.n})
	}
	slices.SortFunc(st.PhaseMean, func(a, b meanState) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Type, b.Type), cmp.Compare(a.K, b.K))
	})
	for id, cpu := range d.target {
		st.Target = append(st.Target, targetCPU{id, cpu})
	}
	slices.SortFunc(st.Target, func(a, b targetCPU) int { return cmp.Compare(a.Attempt, b.Attempt) })
	return json.Marshal(st)
}

// Restore implements policy.Stateful.
func (d *DynamicAdjust) Restore(data []byte) error {
	var st daState
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	track := make(map[int]*phaseTrack, len(st.Tracks))
	for _, ts := range st.Tracks {
		if !ts.Type.Valid() || ts.K < 0 || ts.K >= len(ts.Type.Phases()) || len(ts.Done) != ts.K {
			return fmt.Errorf("%w: track of attempt %d: %v phase %d with %d phase durations", policy.ErrInvalidConfig, ts.Attempt, ts.Type, ts.K, len(ts.Done))
		}
		tr := &phaseTrack{t: ts.Type, job: ts.Job, k: ts.K, progress: ts.Progress, lastS: ts.LastS, startK: ts.StartK}
		for _, v := range ts.Done {
			if v == nil {
				tr.done = append(tr.done, math.NaN())
			} else {
				tr.done = append(tr.done, *v)
			}
		}
		track[ts.Attempt] = tr
	}
	phaseMean := make(map[phaseKey]*meanAcc, len(st.PhaseMean))
	for _, m := range st.PhaseMean {
		if m.N < 1 || !m.Type.Valid() || m.K < 0 {
			return fmt.Errorf("%w: phase mean of %s/%v phase %d over %d attempts", policy.ErrInvalidConfig, m.Job, m.Type, m.K, m.N)
		}
		phaseMean[phaseKey{m.Job, m.Type, m.K}] = &meanAcc{sum: m.Sum, n: m.N}
	}
	target := make(map[int]int64, len(st.Target))
	for _, t := range st.Target {
		if t.VCores < 0 {
			return fmt.Errorf("%w: attempt %d mitigated to %d vcores", policy.ErrInvalidConfig, t.Attempt, t.VCores)
		}
		target[t.Attempt] = t.VCores
	}
	d.track, d.phaseMean, d.target, d.calls = track, phaseMean, target, st.Calls
	return nil
}

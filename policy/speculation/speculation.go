package speculation

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Speculation launches speculative copies of slow attempts on the node that
// heartbeats. Two detectors:
//
//   - Hadoop's default (as Guo et al., Cluster'12 §III-C describe it): in
//     job order, an attempt is slow if its progress rate (LATE Eq. 1) is
//     more than one standard deviation below the mean rate of the job's
//     running attempts of its type; the slow attempt with the longest time
//     left (Eq. 2) is copied first.
//   - LATE (Zaharia et al., OSDI'08 §4.2): an attempt is slow if its rate
//     is below the SlowTaskThreshold percentile of its job's rates; across
//     all jobs the slow attempt with the longest time left is copied first;
//     no copy is launched on a node whose speed (mean rate of its running
//     attempts, each normalized by its job's mean rate) is below the
//     SlowNodeThreshold percentile of the nodes' speeds; at most
//     SpeculativeCap·(cluster slots) copies run at a time.
//
// Both copy only attempts that ran MinRunS, never a task with a copy
// already running, never onto the node of the attempt they copy, and never
// a job of a type while that job still has startable pending tasks of the
// type (Hadoop serves a job's pending tasks before its speculative ones).
// Gates (SEPB, BASE) may veto a copy; the veto reasons are not actions.
type Speculation struct {
	name string
	late bool
	// MinRunS: an attempt must have run this long to be copied (Hadoop: 60 s).
	MinRunS float64
	// SpeculativeCap (LATE): cap on running copies as a fraction of the
	// cluster's slots (LATE's default 10%).
	SpeculativeCap float64
	// SlowTaskThreshold, SlowNodeThreshold (LATE): percentiles (LATE's
	// default 25%).
	SlowTaskThreshold, SlowNodeThreshold float64
	gates                                []speculationGate
}

// speculationGate may veto a copy of attempt a (of job j) on hb's node.
type speculationGate interface {
	allowCopy(hb *policy.Heartbeat, j *policy.JobView, a *policy.AttemptView) (bool, string)
}

var _ policy.Speculator = (*Speculation)(nil)
var _ policy.Tunable = (*Speculation)(nil)

// NewHadoopSpeculation returns Hadoop's default speculation.
func NewHadoopSpeculation() *Speculation {
	return &Speculation{name: NameSpeculationHadoop, MinRunS: 60}
}

// NewLATE returns LATE with its paper's defaults.
func NewLATE() *Speculation {
	return &Speculation{name: NameLATE, late: true, MinRunS: 60, SpeculativeCap: 0.1, SlowTaskThreshold: 0.25, SlowNodeThreshold: 0.25}
}

func (s *Speculation) tunable() policy.ParamSet {
	t := policy.ParamSet{policy.FloatParam(&s.MinRunS, policy.Param{Name: "min_run_s", Default: 60, Min: 0, Max: 3600, Doc: "an attempt must have run this long to be copied"})}
	if s.late {
		t = append(t,
			policy.FloatParam(&s.SpeculativeCap, policy.Param{Name: "speculative_cap", Default: 0.1, Min: 0, Max: 1, Doc: "LATE SpeculativeCap: running copies per cluster slot"}),
			policy.FloatParam(&s.SlowTaskThreshold, policy.Param{Name: "slow_task_threshold", Default: 0.25, Min: 0, Max: 1, Doc: "LATE SlowTaskThreshold: rate percentile below which an attempt is slow"}),
			policy.FloatParam(&s.SlowNodeThreshold, policy.Param{Name: "slow_node_threshold", Default: 0.25, Min: 0, Max: 1, Doc: "LATE SlowNodeThreshold: node-speed percentile below which a node gets no copy"}))
	}
	return t
}

// Name implements policy.Plugin.
func (s *Speculation) Name() string { return s.name }

// Params implements policy.Tunable.
func (s *Speculation) Params() []policy.Param { return s.tunable().Params() }

// SetParam implements policy.Tunable.
func (s *Speculation) SetParam(name string, v float64) error {
	return s.tunable().Set(s.name, name, v)
}

// candidate is a slow attempt with its time left.
type candidate struct {
	job  *policy.JobView
	a    *policy.AttemptView
	left float64
	why  string
}

// Speculate implements policy.Speculator: the copies, and those a gate
// withheld as vetoes.
func (s *Speculation) Speculate(hb *policy.Heartbeat) ([]policy.Action, []policy.Veto) {
	c := hb.Cluster
	if !newTentativeFree(hb).anyRoom() || (s.late && s.nodeIsSlow(hb)) {
		return nil, nil
	}
	budget := math.MaxInt
	if s.late {
		budget = int(math.Floor(s.SpeculativeCap*float64(clusterSlots(c))+1e-9)) - runningCopies(hb)
	}
	var cands []candidate
	for _, j := range c.Jobs {
		for _, t := range []models.TaskType{models.MapTask, models.ReduceTask} {
			cands = append(cands, s.slow(hb, j, t)...)
		}
	}
	if s.late { // LATE ranks across jobs; Hadoop keeps job order
		slices.SortStableFunc(cands, func(x, y candidate) int { return cmp.Compare(y.left, x.left) })
	}
	free := newTentativeFree(hb)
	var out []policy.Action
	var vetoes []policy.Veto
	for _, cd := range cands {
		if budget <= 0 {
			break
		}
		d := cd.job.Demand[cd.a.Type]
		if !free.fits(cd.a.Type, d) {
			continue
		}
		dup := policy.Action{Kind: policy.ActionSpeculate, Job: cd.a.Job, Type: cd.a.Type, Task: cd.a.Task, Attempt: cd.a.ID,
			Node: hb.Node.ID, Slot: hb.SlotFor(cd.a.Type), Resources: d}
		if ok, why := s.gatesAllow(hb, cd.job, cd.a); !ok {
			vetoes = append(vetoes, policy.VetoOf(s.name, dup, why))
			continue
		}
		free.take(cd.a.Type, d)
		budget--
		dup.Resources, dup.Reason = d.Clone(), fmt.Sprintf("%s: %s", s.name, cd.why)
		out = append(out, dup)
	}
	return out, vetoes
}

func (s *Speculation) gatesAllow(hb *policy.Heartbeat, j *policy.JobView, a *policy.AttemptView) (bool, string) {
	for _, g := range s.gates {
		if ok, why := g.allowCopy(hb, j, a); !ok {
			return false, why
		}
	}
	return true, ""
}

// slow returns the job's copyable slow attempts of type t, longest time
// left first.
func (s *Speculation) slow(hb *policy.Heartbeat, j *policy.JobView, t models.TaskType) []candidate {
	now := hb.Cluster.NowS
	if hb.HasPending(j, t) {
		return nil
	}
	var rates []float64
	for _, a := range j.Running {
		if a.Type == t && !a.Speculative && now > a.StartS {
			rates = append(rates, a.ProgressRate(now))
		}
	}
	if len(rates) == 0 {
		return nil
	}
	var threshold float64
	var rule string
	if s.late {
		slices.Sort(rates)
		threshold = percentile(rates, s.SlowTaskThreshold)
		rule = fmt.Sprintf("below the %g percentile %.4g/s of job %s's %v rates", s.SlowTaskThreshold, threshold, j.ID, t)
	} else {
		m, sd := meanStd(rates)
		threshold = m - sd
		rule = fmt.Sprintf("more than one std below the mean (%.4g − %.4g /s) of job %s's %v rates", m, sd, j.ID, t)
	}
	var out []candidate
	var per map[policy.TaskKey]int // built on the first slow attempt
	for _, a := range j.Running {
		if a.Type != t || a.Speculative || a.Node == hb.Node.ID || now-a.StartS < s.MinRunS || a.ProgressRate(now) >= threshold {
			continue
		}
		if per == nil {
			per = attemptsPerTask(j)
		}
		id := a.TaskKey()
		if per[id] > 1 || hb.Copied(id) || hb.Killed(a.ID) {
			continue
		}
		r, left := a.ProgressRate(now), a.TimeLeft(now)
		out = append(out, candidate{job: j, a: a, left: left,
			why: fmt.Sprintf("copy attempt %d (%s/%v#%d on %s): rate %.4g/s %s; time left %.1fs", a.ID, a.Job, a.Type, a.Task, a.Node, r, rule, left)})
	}
	slices.SortStableFunc(out, func(x, y candidate) int { return cmp.Compare(y.left, x.left) })
	return out
}

// nodeIsSlow is LATE's SlowNodeThreshold test for the heartbeating node.
func (s *Speculation) nodeIsSlow(hb *policy.Heartbeat) bool {
	speed := nodeSpeeds(hb.Cluster)
	own, ok := speed[hb.Node.ID]
	if !ok || len(speed) < 2 {
		return false
	}
	all := make([]float64, 0, len(speed))
	for _, v := range speed {
		all = append(all, v)
	}
	slices.Sort(all)
	return own < percentile(all, s.SlowNodeThreshold)
}

// nodeSpeeds is the mean, over each node's running attempts, of the
// attempt's rate divided by its job's mean rate for the type (1 = typical).
func nodeSpeeds(c *policy.ClusterView) map[string]float64 {
	type key struct {
		job string
		t   models.TaskType
	}
	sum, cnt := map[key]float64{}, map[key]int{}
	for _, j := range c.Jobs {
		for _, a := range j.Running {
			if c.NowS > a.StartS {
				k := key{j.ID, a.Type}
				sum[k] += a.ProgressRate(c.NowS)
				cnt[k]++
			}
		}
	}
	nsum, ncnt := map[string]float64{}, map[string]int{}
	for _, j := range c.Jobs {
		for _, a := range j.Running {
			k := key{j.ID, a.Type}
			if c.NowS <= a.StartS || sum[k] <= 0 {
				continue
			}
			nsum[a.Node] += a.ProgressRate(c.NowS) / (sum[k] / float64(cnt[k]))
			ncnt[a.Node]++
		}
	}
	out := make(map[string]float64, len(nsum))
	for n, v := range nsum {
		out[n] = v / float64(ncnt[n])
	}
	return out
}

// clusterSlots is the slot count LATE's SpeculativeCap is a fraction of:
// the typed slots of an MRv1 cluster; on a container cluster, the
// containers of the oldest active job's map request every node could hold.
func clusterSlots(c *policy.ClusterView) int {
	n := 0
	if c.SlotBased {
		for _, nd := range c.Nodes {
			n += nd.MapSlots + nd.ReduceSlots
		}
		return n
	}
	if len(c.Jobs) == 0 {
		return 0
	}
	d := c.Jobs[0].Demand[models.MapTask]
	for _, nd := range c.Nodes {
		k := math.MaxInt
		for p, v := range d {
			if v > 0 && p < len(nd.Capacity) {
				k = min(k, int(nd.Capacity[p]/v))
			}
		}
		if k != math.MaxInt {
			n += k
		}
	}
	return n
}

// runningCopies counts the speculative attempts running in the cluster and
// the copies this heartbeat decided so far.
func runningCopies(hb *policy.Heartbeat) int {
	n := 0
	for _, j := range hb.Cluster.Jobs {
		for _, a := range j.Running {
			if a.Speculative {
				n++
			}
		}
	}
	for _, a := range hb.Actions {
		if a.Kind == policy.ActionSpeculate {
			n++
		}
	}
	return n
}

// tentativeFree tracks the node's free slots and resources while a stage
// builds several actions at once (the pipeline accepts them only after).
type tentativeFree struct {
	slotBased  bool
	mapSlots   int
	redSlots   int
	res        models.Resources
	hasResDims bool
}

func newTentativeFree(hb *policy.Heartbeat) *tentativeFree {
	return &tentativeFree{slotBased: hb.Cluster.SlotBased, mapSlots: hb.FreeMapSlots, redSlots: hb.FreeReduceSlots,
		res: hb.Free.Clone(), hasResDims: len(hb.Free) > 0}
}

func (f *tentativeFree) fits(t models.TaskType, d models.Resources) bool {
	if f.slotBased && ((t == models.MapTask && f.mapSlots < 1) || (t == models.ReduceTask && f.redSlots < 1)) {
		return false
	}
	return !f.hasResDims || d.Fits(f.res)
}

// anyRoom reports whether a copy could fit at all (a free slot on a slot
// cluster, some free resource otherwise), so a full node costs nothing.
func (f *tentativeFree) anyRoom() bool {
	if f.slotBased && f.mapSlots < 1 && f.redSlots < 1 {
		return false
	}
	if !f.hasResDims {
		return true
	}
	for _, v := range f.res {
		if v > 0 {
			return true
		}
	}
	return false
}

func (f *tentativeFree) take(t models.TaskType, d models.Resources) {
	if f.slotBased {
		if t == models.MapTask {
			f.mapSlots--
		} else {
			f.redSlots--
		}
	}
	if f.hasResDims && d != nil {
		f.res = f.res.Sub(d)
	}
}

// attemptsPerTask counts the running attempts of each task of the job.
func attemptsPerTask(j *policy.JobView) map[policy.TaskKey]int {
	n := make(map[policy.TaskKey]int, len(j.Running))
	for _, a := range j.Running {
		n[a.TaskKey()]++
	}
	return n
}

// meanStd returns the mean and the population standard deviation of xs.
func meanStd(xs []float64) (mean, std float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(xs)))
}

// percentile returns the q-quantile (q ∈ [0, 1]) of sorted xs by linear
// interpolation between order statistics.
func percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(sorted)-1)
	return sorted[lo] + (pos-float64(lo))*(sorted[hi]-sorted[lo])
}

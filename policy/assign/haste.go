package assign

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/solver"
)

// FFD-DP, HaSTE and HaSTE-A (Yao, Gao, Wang, Sheng, Mi, "Design and
// Implementation of a Scheduler for Hadoop YARN ...", IEEE TCC 2021,
// paper 001): every (job, task type) request that fits the node's residual
// capacity is scored and the best is started, with the task of best
// locality; the pipeline asks again with the updated residual (the paper's
// "after updating S_j's resource capacity, RTA will repeat this selection").
//
// Fitness, Eq. 1: F_ij = Σ_p R[i,p]·C[j,p]·w_p with C[j,·] the node's
// residual capacity (the worked table of §3.4.1 recomputes F on ⟨10, 6⟩,
// ⟨7, 5⟩, ⟨4, 4⟩, ⟨3, 1⟩). The product is bilinear, so one weight per
// resource only has a meaning once the units are fixed; the paper's table
// uses GB and cores with w = 1. optd measures in MB and vcores and applies
// w_p to both factors, F = Σ_p (w_p·R[i,p])·(w_p·C[j,p]), which with the
// default weights (1/1024 per MB, 1 per vcore) reproduces the paper's
// table exactly.
//
// Urgency, Eqs. 2-3 (A = tasks assigned so far, T = tasks of the stage, O =
// running, R^x = Σ_p w_p·R[x,p] the weighted request of one task of type x):
//
//	U_i^m = (A_i^m/T_i^m)·(A_i^r·R_i^r + A_i^am·R_i^am)
//	U_i^r = U_i^m·(A_i^m/T_i^m)·(O_i^m·R_i^m + O_i^r·R_i^r)/(O_i^r·R_i^r)
//
// U^r/U^m = (map progress)/(share of the job's running resources held by
// reduces), which is rule R3. With no reduce running the last factor is
// infinite: the reduce request is maximally urgent (as R3 says: share 0 <
// progress) unless U^m·A^m/T^m = 0, when it is 0. The simulator runs no
// ApplicationMaster containers; every active job has one AM (A^am = 1)
// with the MapReduce default request ⟨1536 MB, 1 vcore⟩
// (policy.HeartbeatConfig.AMRequest).
//
// Preference, Eq. 4: P_i = (F_i − F_min)/(F_max − F_min) + (U_i −
// U_min)/(U_max − U_min) over the requests that fit; a term whose max
// equals its min contributes 0 (every request ties on it), and an infinite
// urgency normalizes to 1 with min and max taken over the finite ones.
//
// HaSTE-A adds alignment, Eq. 5: A_i = (I_i + I_i^current)/Σ_j I_j, with
// I_i the job's stages (iterations) and I_i^current those finished, and
// weighs the three normalized scores by β, Eq. 6 (default {0.2, 0.2, 0.6},
// §5.2.3).
//
// HaSTE and HaSTE-A plan the first batch with the Initial Task Assignment
// (§3.3): when the first heartbeat with active jobs arrives, the pending
// maps of every active job are assigned to nodes by solver.Exact, the
// proven global optimum of the multi-resource knapsack (better than the
// paper's node-by-node Algorithm 1, see package solver); each node starts
// its planned tasks on its first heartbeat, and RTA takes over from there.

var (
	_ policy.Assigner    = (*scoredAssigner)(nil)
	_ policy.Initializer = (*scoredAssigner)(nil)
	_ policy.Stateful    = (*scoredAssigner)(nil)
)

// DefaultBeta is HaSTE-A's β of §5.2.3.
var DefaultBeta = [3]float64{0.2, 0.2, 0.6}

// DefaultITATimeLimit bounds the exact initial task assignment.
const DefaultITATimeLimit = 2 * time.Second

// scoredAssigner is FFD-DP (fitness only), HaSTE (fitness + urgency, ITA)
// or HaSTE-A (β-weighted fitness, urgency and alignment, ITA).
type scoredAssigner struct {
	byName
	cfg     policy.HeartbeatConfig
	urgency bool
	align   bool
	beta    [3]float64
	// plan[node] lists the ITA's planned map starts of the node's first
	// heartbeat (job → count, in job order); owner is that heartbeat.
	plan  map[string][]planned
	owner map[string]*policy.Heartbeat
}

type planned struct {
	job   string
	count int
}

func newScored(name string, cfg policy.HeartbeatConfig, haste, align bool) (policy.Stages, error) {
	s := &scoredAssigner{byName: byName(name), cfg: cfg, urgency: haste, align: align, beta: cfg.Beta}
	if s.beta == [3]float64{} {
		s.beta = DefaultBeta
	}
	for k, b := range s.beta {
		if !(b >= 0) || math.IsInf(b, 0) {
			return policy.Stages{}, fmt.Errorf("%w: beta[%d] = %g: must be a finite number ≥ 0", policy.ErrInvalidConfig, k, b)
		}
	}
	if s.cfg.ITATimeLimit < 0 {
		return policy.Stages{}, fmt.Errorf("%w: ITA time limit %v: negative", policy.ErrInvalidConfig, s.cfg.ITATimeLimit)
	}
	return policy.Stages{Assigner: s}, nil
}

// Init runs the Initial Task Assignment (HaSTE and HaSTE-A only).
func (s *scoredAssigner) Init(ctx context.Context, c *policy.ClusterView) error {
	if !s.urgency || len(c.Resources) == 0 {
		return nil
	}
	w, err := weightsOf(s.cfg, c.Resources)
	if err != nil {
		return err
	}
	in := &solver.Instance{Weights: w}
	for _, n := range c.Nodes {
		free := make([]int64, len(n.Free))
		for p, v := range n.Free {
			free[p] = max(v, 0)
		}
		in.Nodes = append(in.Nodes, solver.Node{ID: n.ID, Capacity: free})
	}
	for _, j := range c.Jobs {
		if len(j.PendingMaps) == 0 {
			continue
		}
		d := j.Demand[models.MapTask]
		if len(d) != len(c.Resources) || d.IsZero() {
			continue
		}
		in.Tasks = append(in.Tasks, solver.TaskType{ID: j.ID, Demand: []int64(d.Clone()), Count: len(j.PendingMaps)})
	}
	if len(in.Tasks) == 0 {
		return nil
	}
	limit := s.cfg.ITATimeLimit
	if limit == 0 {
		limit = DefaultITATimeLimit
	}
	res, err := solver.Exact(ctx, in, solver.Options{TimeLimit: limit})
	if err != nil {
		return err
	}
	s.plan, s.owner = map[string][]planned{}, map[string]*policy.Heartbeat{}
	for _, a := range res.Assignment {
		if a.Count > 0 {
			s.plan[a.Node] = append(s.plan[a.Node], planned{a.Task, a.Count})
		}
	}
	return nil
}

// Rank offers the node's ITA plan first (on its first heartbeat), then the
// RTA requests by preference.
func (s *scoredAssigner) Rank(hb *policy.Heartbeat) []policy.Action {
	out := s.planned(hb)
	for _, r := range s.score(hb) {
		out = append(out, r.action)
	}
	return out
}

// planned returns the Start candidates the ITA plans for this heartbeat's
// node; the plan of a node is used by its first heartbeat only.
func (s *scoredAssigner) planned(hb *policy.Heartbeat) []policy.Action {
	id := hb.Node.ID
	p, ok := s.plan[id]
	if !ok {
		return nil
	}
	if o := s.owner[id]; o != nil && o != hb {
		delete(s.plan, id)
		return nil
	}
	s.owner[id] = hb
	var out []policy.Action
	for _, e := range p {
		j := hb.Cluster.Job(e.job)
		if j == nil {
			continue
		}
		done := 0
		for _, a := range hb.Actions {
			if a.Kind == policy.ActionStart && a.Job == e.job && a.Type == models.MapTask {
				done++
			}
		}
		if done >= e.count {
			continue
		}
		if a, ok := hb.StartCandidate(j, models.MapTask, func() string {
			return fmt.Sprintf("%s ITA: the exact initial assignment plans %d maps of job %s on node %s (%d started)", s.Name(), e.count, e.job, id, done)
		}); ok {
			out = append(out, a)
		}
	}
	return out
}

// request is one (job, type) request that fits, with its scores.
type request struct {
	action      policy.Action
	job         int
	f, u, al, p float64
}

// score computes F, U, A and P of every request that fits and returns them
// best first (ties: submission order, reduces before maps as YARN orders
// them).
func (s *scoredAssigner) score(hb *policy.Heartbeat) []request {
	c := hb.Cluster
	w, err := weightsOf(s.cfg, c.Resources)
	if err != nil {
		return nil
	}
	sumI := 0.0
	for _, j := range c.Jobs {
		sumI += float64(max(j.Stages, 1))
	}
	amR := s.amWeighted(c, w)
	var rs []request
	for k, j := range c.Jobs {
		var u jobUsage
		uDone := false
		for _, t := range typeOrder {
			a, ok := hb.StartCandidate(j, t, nil)
			if !ok {
				continue
			}
			if !uDone {
				u, uDone = usageOf(hb, j), true
			}
			r := request{action: a, job: k, f: fitness(j.Demand[t], hb.Free, w)}
			if s.urgency {
				r.u = urgency(j, t, u, w, amR)
			}
			r.al = (float64(max(j.Stages, 1)) + float64(j.Stage)) / sumI
			rs = append(rs, r)
		}
	}
	fMin, fMax := finiteRange(rs, func(r request) float64 { return r.f })
	uMin, uMax := finiteRange(rs, func(r request) float64 { return r.u })
	aMin, aMax := finiteRange(rs, func(r request) float64 { return r.al })
	for i := range rs {
		r := &rs[i]
		nf, nu, na := norm(r.f, fMin, fMax), norm(r.u, uMin, uMax), norm(r.al, aMin, aMax)
		switch {
		case s.align:
			r.p = s.beta[0]*nf + s.beta[1]*nu + s.beta[2]*na
			r.action.Reason = fmt.Sprintf("%s: P = %.3g = %.2g·F %.3g (norm %.3g) + %.2g·U %.3g (norm %.3g) + %.2g·A %.3g (norm %.3g), Eq. 6",
				s.Name(), r.p, s.beta[0], r.f, nf, s.beta[1], r.u, nu, s.beta[2], r.al, na)
		case s.urgency:
			r.p = nf + nu
			r.action.Reason = fmt.Sprintf("%s: P = %.3g = F %.3g (norm %.3g) + U %.3g (norm %.3g), Eq. 4", s.Name(), r.p, r.f, nf, r.u, nu)
		default:
			r.p = r.f
			r.action.Reason = fmt.Sprintf("%s: highest fitness F = %.4g (Eq. 1) on residual %v", s.Name(), r.f, hb.Free)
		}
	}
	slices.SortStableFunc(rs, func(a, b request) int { return cmp.Compare(b.p, a.p) })
	return rs
}

// amWeighted is R^am, the weighted request of an ApplicationMaster.
func (s *scoredAssigner) amWeighted(c *policy.ClusterView, w []float64) float64 {
	am := s.cfg.AMRequest
	if am == nil {
		am = make(models.Resources, len(c.Resources))
		for p, n := range c.Resources {
			switch n {
			case models.ResourceMemoryMB:
				am[p] = 1536
			case models.ResourceVCores:
				am[p] = 1
			}
		}
	}
	if len(am) != len(w) {
		return 0
	}
	return am.Dot(w)
}

// fitness is Eq. 1 with the weights applied to both factors (see above).
func fitness(r, free models.Resources, w []float64) float64 {
	if len(r) != len(free) || len(w) != len(r) {
		return 0
	}
	f := 0.0
	for p := range r {
		f += w[p] * float64(r[p]) * w[p] * float64(free[p])
	}
	return f
}

// urgency is Eq. 2 for maps and Eq. 3 for reduces.
func urgency(j *policy.JobView, t models.TaskType, u jobUsage, w []float64, amR float64) float64 {
	rm, rr := weighted(j.Demand[models.MapTask], w), weighted(j.Demand[models.ReduceTask], w)
	progress := 0.0
	if j.MapsTotal > 0 {
		progress = float64(u.mapsAssigned) / float64(j.MapsTotal)
	} else {
		progress = 1
	}
	um := progress * (float64(u.reducesAssigned)*rr + amR)
	if t == models.MapTask {
		return um
	}
	num := um * progress
	if num == 0 {
		return 0
	}
	den := float64(u.reduces) * rr
	if den == 0 {
		return math.Inf(1)
	}
	return num * (float64(u.maps)*rm + den) / den
}

func weighted(r models.Resources, w []float64) float64 {
	if len(r) != len(w) {
		return 0
	}
	return r.Dot(w)
}

// finiteRange returns the min and max of the finite values.
func finiteRange(rs []request, v func(request) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		if x := v(r); !math.IsInf(x, 0) {
			lo, hi = math.Min(lo, x), math.Max(hi, x)
		}
	}
	return lo, hi
}

// norm is (x − min)/(max − min), 0 when max = min, 1 for +Inf.
func norm(x, lo, hi float64) float64 {
	switch {
	case math.IsInf(x, 1):
		return 1
	case !(hi > lo):
		return 0
	}
	return (x - lo) / (hi - lo)
}

// hasteState is the snapshot of a scoredAssigner: the ITA plan of the
// nodes whose first heartbeat has not come yet (a node's plan is used by
// that heartbeat only, so the others' plans are spent).
type hasteState struct {
	Plan map[string][]plannedState `json:"plan,omitempty"`
}

type plannedState struct {
	Job   string `json:"job"`
	Count int    `json:"count"`
}

// Snapshot implements policy.Stateful.
func (s *scoredAssigner) Snapshot() ([]byte, error) {
	st := hasteState{}
	for node, p := range s.plan {
		if s.owner[node] != nil {
			continue
		}
		if st.Plan == nil {
			st.Plan = map[string][]plannedState{}
		}
		for _, e := range p {
			st.Plan[node] = append(st.Plan[node], plannedState{e.job, e.count})
		}
	}
	return json.Marshal(st)
}

// Restore implements policy.Stateful.
func (s *scoredAssigner) Restore(data []byte) error {
	var st hasteState
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	s.plan, s.owner = nil, nil
	if st.Plan != nil {
		s.plan, s.owner = map[string][]planned{}, map[string]*policy.Heartbeat{}
	}
	for node, p := range st.Plan {
		for _, e := range p {
			if e.Job == "" || e.Count < 1 {
				return fmt.Errorf("%w: plan of node %q: %d maps of job %q", policy.ErrInvalidConfig, node, e.Count, e.Job)
			}
			s.plan[node] = append(s.plan[node], planned{e.Job, e.Count})
		}
	}
	return nil
}

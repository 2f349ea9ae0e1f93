package sim

import (
	"cmp"
	"container/heap"
	"math"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// ClusterBoundOptions say which run of a cluster scenario a bound is for and
// what the policy of that run may do.
type ClusterBoundOptions struct {
	// Seed is the run's ClusterOptions.Seed: the bound sees the task works
	// drawn from it.
	Seed uint64
	// Sharing: the policy may grant an attempt more vcores than it
	// requested (ActionAdjust, a policy.Sharer: resource stealing,
	// DynamicAdjust), which speeds the attempt up (Amdahl's law, see
	// ClusterScenario). Set it for any policy that might.
	Sharing bool
	// SlotChanges: the policy may change a node's typed slot counts
	// (ActionSlots, a policy.SlotPolicy: PI-DHSA). The simulator checks a
	// slot change only against the slots in use, so slots then bound
	// nothing.
	SlotChanges bool
}

// BoundOptionsFor returns the options that hold for a run of pipe with
// ClusterOptions.Seed = seed.
func BoundOptionsFor(pipe *policy.Pipeline, seed uint64) ClusterBoundOptions {
	return ClusterBoundOptions{Seed: seed, Sharing: pipe.Shares(), SlotChanges: pipe.SetsSlots()}
}

// ClusterBound is a lower bound on a run's ClusterResult.MakespanS and
// MeanResponseS, with the terms it is the largest of (seconds).
type ClusterBound struct {
	MakespanS     float64 `json:"makespan_s"`
	MeanResponseS float64 `json:"mean_response_s"`
	// CriticalPathMakespanS is (B3)'s max_j (s_j + C_j) − s_min;
	// AreaMakespanS (B4) the largest over capacities and release times.
	CriticalPathMakespanS float64 `json:"critical_path_makespan_s"`
	AreaMakespanS         float64 `json:"area_makespan_s"`
	// JobResponseS is (B5), the mean over jobs of max(C_j, A_jq/K_q);
	// SRPTResponseS is (B6), the largest over capacities.
	JobResponseS  float64 `json:"job_response_s"`
	SRPTResponseS float64 `json:"srpt_response_s"`
	// Binding names the capacity of the largest area term of the makespan
	// (a resource name, or "slots"); "" when the cluster has none.
	Binding string `json:"binding"`
}

// ClusterLowerBound returns a lower bound on the makespan and on the mean
// job response time of the run of the scenario with ClusterOptions.Seed =
// opt.Seed under ANY policy that does no more than opt allows: it is ≤ what
// RunCluster reports for every registered heartbeat pipeline (with
// BoundOptionsFor), up to floating-point rounding.
//
// Notation: job j is submitted at s_j and finishes at f_j; its tasks have
// the works w drawn for the run (drawWorks), its reduces a shuffle fraction
// φ_j, its tasks of type t a demand d_jt; K_q is the cluster's total
// capacity q (a resource, or "slots").
//
// (B1) Rate. An attempt on node n progresses at σ_n/((1−p) + p·r/g)
// (ClusterScenario): without Sharing its grant g is its request r and the
// rate is σ_n ≤ σ̄ = max_n σ_n. With Sharing the grant fits the node, g ≤
// V̄ = max_n vcores_n, and a positive integer request is at least
// max(d_vc, 1), so the rate is at most ρ̄ = σ̄/((1−p) + p·max(d_vc, 1)/V̄).
// An attempt's work is the task's work times 1 + its locality penalty ≥ 1,
// and a killed attempt's progress is lost, so a task completes no earlier
// than w/ρ̄ after its successful attempt started.
//
// (B2) Critical path. A stage starts when the previous one ends (the first
// at s_j); its maps start no earlier, and a reduce cannot pass its shuffle
// (the first φ_j of its work) before the stage's last map finishes, after
// which (1−φ_j)·w of it remains. With M and R the largest map and reduce
// works of stage k (0 when it has none), the stage lasts at least
// L_jk = max(M/ρ̄_m + (1−φ_j)·R/ρ̄_r, R/ρ̄_r), so f_j ≥ s_j + C_j with
// C_j = Σ_k L_jk.
//
// (B3) Area. A successful attempt holds its request (≥ the demand in every
// resource) for at least w/ρ̄, the requests on a node never exceed its
// capacity (the simulator refuses such a start), and on a slot cluster
// every attempt holds a slot; without SlotChanges a node never has more
// than its configured map + reduce slots (PD-DHSA may put a task into a
// slot of the other type, so only the total counts). Job j thus occupies
// A_jq = Σ_tasks d_q·w/ρ̄ of capacity q within [s_j, f_j], and the cluster
// serves at most K_q per second.
//
// (B4) Makespan (from s_min = min_j s_j, as ClusterResult measures it):
// the jobs submitted at or after τ occupy Σ_{j: s_j ≥ τ} A_jq after τ, so
// makespan ≥ max( max_j (s_j + C_j), max_{q, τ ∈ {s_j}} τ + Σ_{j: s_j ≥ τ}
// A_jq/K_q ) − s_min.
//
// (B5) Each job alone: f_j − s_j ≥ max(C_j, max_q A_jq/K_q).
//
// (B6) One machine. For each q, a run is a (fractional) preemptive schedule
// on one machine of jobs with release s_j and processing A_jq/K_q in which
// job j is done by f_j; preemptive EDF on the deadlines f_j is then
// feasible too, so Σ_j (f_j − s_j) is at least the least total flow time of
// 1|r_j, pmtn|ΣC_j, which the shortest-remaining-processing-time rule
// attains (Schrage, Oper. Res. 16(3), 1968).
//
// (B7) Network. With a Network, a reduce's shuffle is its fetches and its
// compute work the (1−φ_j)·w after them: (B2) and (B3) count a reduce's
// work as (1−φ_j)·w. A reducer's fetches end no earlier than the stage's
// last map, and bring it its share Y = o_j/R_j of each of the stage's m
// maps' outputs o_j, all but those of the maps that ran on its own node
// over its node link of C MB/s (NodeMBps, every node's), starting no
// earlier than the first map's end, w_min/ρ̄_m after the stage began. If
// k of the maps ran on its node, which runs at most S maps at once (its
// map and reduce slots, or as many map requests as its capacity holds;
// unbounded with SlotChanges or without demands), they took ⌈k/S⌉ waves
// of at least w_min/ρ̄_m each. So its shuffle lasts at least
// T_sh = min over k ∈ [0, m] of max(⌈k/S⌉·w_min/ρ̄_m, w_min/ρ̄_m +
// (m−k)·Y/C), and a stage at least max(M/ρ̄_m, T_sh) + (1−φ_j)·R/ρ̄_r.
//
// The mean response bound is the larger of (B5)'s mean and (B6)/n. Ignored,
// so the bound is valid but not tight: the wait for a heartbeat, slow-start
// and the reduce ramp, and capacities per node or per slot type.
func ClusterLowerBound(scenario *ClusterScenario, opt ClusterBoundOptions) (*ClusterBound, error) {
	sc := scenario.withDefaults()
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	works := sc.drawWorks(opt.Seed)
	caps := boundCapacities(sc, opt)
	n := len(sc.Jobs)
	submit := make([]float64, n)
	path := make([]float64, n)   // C_j
	area := make([][]float64, n) // A_jq
	for i := range sc.Jobs {
		j := &sc.Jobs[i]
		submit[i] = j.SubmitS
		rate := [2]float64{maxRate(sc, j, models.MapTask, opt), maxRate(sc, j, models.ReduceTask, opt)}
		area[i] = make([]float64, len(caps))
		// The share of a task's work it computes: a reduce over the
		// network fetches the first φ_j (B7).
		computed := [2]float64{1, 1}
		if sc.Network != nil {
			computed[1] = 1 - j.ShuffleFraction
		}
		for _, stage := range works[i] {
			longest := [2]float64{}
			shortestMap := math.Inf(1)
			for k, ws := range stage {
				for _, w := range ws {
					if k == 0 {
						shortestMap = min(shortestMap, w)
					}
					w *= computed[k]
					longest[k] = max(longest[k], w)
					for q, c := range caps {
						area[i][q] += c.amount(j, models.TaskType(k+1)) * w / rate[k]
					}
				}
			}
			m, r := longest[0]/rate[0], longest[1]/rate[1]
			if sc.Network != nil {
				// r is already the (1−φ_j) part
				path[i] += max(m, shuffleBound(sc, j, len(stage[0]), shortestMap/rate[0], mapsPerNode(sc, j, opt))) + r
			} else {
				path[i] += max(m+(1-j.ShuffleFraction)*r, r)
			}
		}
	}
	start := slices.Min(submit)
	b := &ClusterBound{}
	var resp float64
	for i := range n {
		b.CriticalPathMakespanS = max(b.CriticalPathMakespanS, submit[i]+path[i]-start)
		alone := path[i]
		for q, c := range caps {
			alone = max(alone, area[i][q]/c.total)
		}
		resp += alone
	}
	b.JobResponseS = resp / float64(n)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, c int) int { return cmp.Compare(submit[a], submit[c]) })
	for q, c := range caps {
		proc := make([]float64, n)
		for i := range n {
			proc[i] = area[i][q] / c.total
		}
		// (B4): suffix sums over jobs in submission order.
		var later float64
		for k := n - 1; k >= 0; k-- {
			later += proc[order[k]]
			if v := submit[order[k]] + later - start; v > b.AreaMakespanS {
				b.AreaMakespanS, b.Binding = v, c.name
			}
		}
		b.SRPTResponseS = max(b.SRPTResponseS, srptTotalFlow(submit, proc)/float64(n))
	}
	b.MakespanS = max(b.CriticalPathMakespanS, b.AreaMakespanS)
	b.MeanResponseS = max(b.JobResponseS, b.SRPTResponseS)
	return b, nil
}

// shuffleBound is T_sh of (B7) for a stage of job j with m maps whose
// shortest takes wMin seconds at the best rate, on nodes running at most
// s maps at once (0: unbounded).
func shuffleBound(sc *ClusterScenario, j *ClusterJob, m int, wMin float64, s int) float64 {
	if j.Reduces == 0 || m == 0 || j.MapOutputMB <= 0 {
		return 0
	}
	y := j.MapOutputMB / float64(j.Reduces) / sc.Network.NodeMBps
	best := math.Inf(1)
	for k := 0; k <= m; k++ {
		waves := 1.0
		if s > 0 {
			waves = math.Ceil(float64(k) / float64(s))
		}
		best = min(best, max(waves*wMin, wMin+float64(m-k)*y))
	}
	return best
}

// mapsPerNode is S of (B7) for job j: the most of its maps any node runs
// at once, 0 when nothing bounds it.
func mapsPerNode(sc *ClusterScenario, j *ClusterJob, opt ClusterBoundOptions) int {
	if opt.SlotChanges {
		return 0
	}
	most := 0
	for _, n := range sc.Cluster.Nodes {
		k := math.MaxInt
		if n.MapSlots+n.ReduceSlots > 0 {
			k = n.MapSlots + n.ReduceSlots
		}
		for p, v := range j.Demand[models.MapTask] {
			if v > 0 && p < len(n.Capacity) {
				k = min(k, int(n.Capacity[p]/v))
			}
		}
		if k == math.MaxInt {
			return 0
		}
		most = max(most, k)
	}
	return most
}

// boundCapacity is a capacity of (B3): its name, the cluster's total K_q,
// and the resource index (slots when res < 0).
type boundCapacity struct {
	name  string
	total float64
	res   int
}

// amount is what one task of type t of job j holds of the capacity.
func (c boundCapacity) amount(j *ClusterJob, t models.TaskType) float64 {
	if c.res < 0 {
		return 1
	}
	if d := j.Demand[t]; len(d) > c.res {
		return float64(d[c.res])
	}
	return 0
}

// boundCapacities lists the capacities (B3) may use: every resource with a
// positive total, and the slots of a slot cluster whose policy keeps them.
func boundCapacities(sc *ClusterScenario, opt ClusterBoundOptions) []boundCapacity {
	var out []boundCapacity
	total := sc.Cluster.TotalCapacity()
	for q, name := range sc.Cluster.Resources {
		if total[q] > 0 {
			out = append(out, boundCapacity{name: name, total: float64(total[q]), res: q})
		}
	}
	slots := 0
	for _, n := range sc.Cluster.Nodes {
		slots += n.MapSlots + n.ReduceSlots
	}
	if slots > 0 && !opt.SlotChanges {
		out = append(out, boundCapacity{name: "slots", total: float64(slots), res: -1})
	}
	return out
}

// maxRate is ρ̄ of (B1) for the tasks of type t of job j.
func maxRate(sc *ClusterScenario, j *ClusterJob, t models.TaskType, opt ClusterBoundOptions) float64 {
	speed := 1.0
	if len(sc.Stragglers) > 0 {
		slow := map[string]float64{}
		for _, s := range sc.Stragglers {
			slow[s.Node] = s.Speed
		}
		speed = 0
		for _, n := range sc.Cluster.Nodes {
			if v, ok := slow[n.ID]; ok {
				speed = max(speed, v)
			} else {
				speed = 1
			}
		}
	}
	vc := sc.Cluster.Resources.Index(models.ResourceVCores)
	if !opt.Sharing || vc < 0 {
		return speed
	}
	var most int64
	for _, n := range sc.Cluster.Nodes {
		if len(n.Capacity) > vc {
			most = max(most, n.Capacity[vc])
		}
	}
	if most <= 0 {
		return speed
	}
	r := 1.0
	if d := j.Demand[t]; len(d) > vc && d[vc] > 1 {
		r = float64(d[vc])
	}
	p := j.ParallelFraction
	return max(speed, speed/((1-p)+p*r/float64(most)))
}

// srptTotalFlow returns Σ_j (F_j − r_j) of the shortest-remaining-
// processing-time schedule of jobs with releases r and processing times p
// on one machine of speed 1: the least total flow time of any preemptive
// schedule (Schrage 1968).
func srptTotalFlow(release, proc []float64) float64 {
	order := make([]int, len(release))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(release[a], release[b]) })
	var ready remainingHeap
	var flow, now float64
	next := 0
	for next < len(order) || ready.Len() > 0 {
		if ready.Len() == 0 {
			now = max(now, release[order[next]])
		}
		for next < len(order) && release[order[next]] <= now {
			heap.Push(&ready, remaining{job: order[next], left: proc[order[next]]})
			next++
		}
		cur := heap.Pop(&ready).(remaining)
		arrival := math.Inf(1)
		if next < len(order) {
			arrival = release[order[next]]
		}
		if now+cur.left <= arrival {
			now += cur.left
			flow += now - release[cur.job]
			continue
		}
		cur.left -= arrival - now
		now = arrival
		heap.Push(&ready, cur)
	}
	return flow
}

// remaining is a released job of srptTotalFlow and its remaining work.
type remaining struct {
	job  int
	left float64
}

// remainingHeap is a min-heap on the remaining work.
type remainingHeap []remaining

func (h remainingHeap) Len() int           { return len(h) }
func (h remainingHeap) Less(a, b int) bool { return h[a].left < h[b].left }
func (h remainingHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *remainingHeap) Push(x any)        { *h = append(*h, x.(remaining)) }
func (h *remainingHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

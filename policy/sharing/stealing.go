package sharing

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// ResourceStealing is resource stealing (Guo, Fox, Zhou, Ruan, IEEE
// Cluster'12, §III-B): the residual resources of a node — reserved for its
// idle slots, i.e. the node's free resources after this heartbeat's starts
// — are lent to the tasks running there, and handed back whenever new tasks
// start (grants last one heartbeat and are recomputed on every heartbeat,
// after the assignment, so a start always gets its full request first).
// Table I's six strategies decide who gets the residual:
//
//	Even  every running attempt gets an equal part;
//	FCM   First-Come-Most: the attempt that started first;
//	STLM  Shortest-Time-Left-Most: the attempt with the least time left
//	      (LATE Eqs. 1-2);
//	LTLM  Longest-Time-Left-Most: the attempt with the most time left;
//	STM   Speculative-Task-Most: the speculative attempts (evenly), else Even;
//	LTM   Laggard-Task-Most: the laggards (evenly), else Even.
//
// Laggards (LTM): the paper's fastness, Eq. (3), is lost in the text; from
// its description ("reflects the order of task completion for each job; a
// task with small fastness will complete later") we use the rank form
// fastness(T) = |{T' of T's job and type : TimeLeft(T') > TimeLeft(T)}| /
// (n − 1) over the job's n running attempts of the type (all nodes, copies
// included; 1 if n = 1), so the attempt finishing last has fastness 0; a
// laggard has fastness < SlowTaskThreshold (default 0.25, LATE's percentile).
//
// The favoured attempts get FavouredShare of the residual (default 1: "is
// given residual resources") and every running attempt an even part of the
// rest. Amounts are whole units; a remainder goes one unit each to the
// attempts in start order. Only the StolenResources dimensions are lent
// (default vcores, the paper's critical resource, realised as extra
// threads; memory stays as requested), or every dimension if the cluster
// has none of them.
type ResourceStealing struct {
	Mode              StealMode
	FavouredShare     float64
	SlowTaskThreshold float64
	StolenResources   []string
}

// StealMode is a residual-resource strategy of Table I.
type StealMode uint8

// The six strategies.
const (
	StealEven StealMode = iota + 1
	StealFCM
	StealSTLM
	StealLTLM
	StealSTM
	StealLTM
)

var stealModeNames = [...]string{StealEven: "even", StealFCM: "fcm", StealSTLM: "stlm", StealLTLM: "ltlm", StealSTM: "stm", StealLTM: "ltm"}

func (m StealMode) String() string {
	if m >= StealEven && m <= StealLTM {
		return stealModeNames[m]
	}
	return fmt.Sprintf("StealMode(%d)", uint8(m))
}

var _ policy.Sharer = (*ResourceStealing)(nil)
var _ policy.Tunable = (*ResourceStealing)(nil)

// NewResourceStealing returns the strategy with the defaults above.
func NewResourceStealing(m StealMode) *ResourceStealing {
	return &ResourceStealing{Mode: m, FavouredShare: 1, SlowTaskThreshold: 0.25, StolenResources: []string{models.ResourceVCores}}
}

// Name implements policy.Plugin.
func (s *ResourceStealing) Name() string { return NameResourceStealingPrefix + s.Mode.String() }

func (s *ResourceStealing) tunable() policy.ParamSet {
	t := policy.ParamSet{policy.FloatParam(&s.FavouredShare, policy.Param{Name: "favoured_share", Default: 1, Min: 0, Max: 1, Doc: "fraction of the residual given to the favoured attempts (the rest evenly)"})}
	if s.Mode == StealLTM {
		t = append(t, policy.FloatParam(&s.SlowTaskThreshold, policy.Param{Name: "slow_task_threshold", Default: 0.25, Min: 0, Max: 1, Doc: "LTM: fastness below which an attempt is a laggard"}))
	}
	return t
}

// Params implements policy.Tunable.
func (s *ResourceStealing) Params() []policy.Param { return s.tunable().Params() }

// SetParam implements policy.Tunable.
func (s *ResourceStealing) SetParam(name string, v float64) error {
	return s.tunable().Set(s.Name(), name, v)
}

// Share implements policy.Sharer.
func (s *ResourceStealing) Share(hb *policy.Heartbeat) []policy.Action {
	running := liveAttempts(hb)
	if len(running) == 0 || len(hb.Free) == 0 {
		return nil
	}
	dims := stolenDims(hb.Cluster.Resources, s.StolenResources)
	fav, why := s.favoured(hb, running)
	extra := make([]models.Resources, len(running))
	for k := range extra {
		extra[k] = make(models.Resources, len(hb.Free))
	}
	for _, p := range dims {
		res := max(hb.Free[p], 0)
		toFav := int64(0)
		if len(fav) > 0 {
			toFav = int64(math.Floor(s.FavouredShare*float64(res) + 1e-9))
			split(toFav, fav, func(k int, v int64) { extra[k][p] += v })
		}
		all := make([]int, len(running))
		for k := range all {
			all[k] = k
		}
		split(res-toFav, all, func(k int, v int64) { extra[k][p] += v })
	}
	var out []policy.Action
	for k, a := range running {
		if extra[k].IsZero() {
			continue
		}
		out = append(out, policy.Action{Kind: policy.ActionAdjust, Job: a.Job, Type: a.Type, Task: a.Task, Attempt: a.ID, Node: hb.Node.ID,
			Resources: a.Requested.Add(extra[k]),
			Reason:    fmt.Sprintf("%s: %s; attempt %d steals %v of the residual %v", s.Name(), why, a.ID, extra[k], hb.Free)})
	}
	return out
}

// favoured returns the indexes (into running, which is in start order) of
// the attempts the strategy favours, and why.
func (s *ResourceStealing) favoured(hb *policy.Heartbeat, running []*policy.AttemptView) ([]int, string) {
	now := hb.Cluster.NowS
	pick := func(better func(x, y *policy.AttemptView) bool, label string) ([]int, string) {
		b := 0
		for k := 1; k < len(running); k++ {
			if better(running[k], running[b]) {
				b = k
			}
		}
		return []int{b}, fmt.Sprintf("%s attempt %d favoured", label, running[b].ID)
	}
	switch s.Mode {
	case StealFCM:
		return []int{0}, fmt.Sprintf("first-come attempt %d favoured", running[0].ID)
	case StealSTLM:
		return pick(func(x, y *policy.AttemptView) bool { return x.TimeLeft(now) < y.TimeLeft(now) }, "shortest-time-left")
	case StealLTLM:
		return pick(func(x, y *policy.AttemptView) bool { return x.TimeLeft(now) > y.TimeLeft(now) }, "longest-time-left")
	case StealSTM, StealLTM:
		var fav []int
		var ids []string
		for k, a := range running {
			if (s.Mode == StealSTM && a.Speculative) || (s.Mode == StealLTM && Fastness(hb.Cluster, a) < s.SlowTaskThreshold) {
				fav = append(fav, k)
				ids = append(ids, fmt.Sprint(a.ID))
			}
		}
		label := map[StealMode]string{StealSTM: "speculative", StealLTM: "laggard"}[s.Mode]
		if len(fav) == 0 {
			return nil, "no " + label + " attempt, even split"
		}
		return fav, fmt.Sprintf("%s attempts %s favoured", label, strings.Join(ids, ","))
	}
	return nil, "even split"
}

// Fastness is LTM's fastness of attempt a (see ResourceStealing): the
// fraction of the other running attempts of its job and type expected to
// finish after it.
func Fastness(c *policy.ClusterView, a *policy.AttemptView) float64 {
	j := c.Job(a.Job)
	if j == nil {
		return 1
	}
	own := a.TimeLeft(c.NowS)
	n, later := 0, 0
	for _, o := range j.Running {
		if o.Type != a.Type || o.ID == a.ID {
			continue
		}
		n++
		if o.TimeLeft(c.NowS) > own {
			later++
		}
	}
	if n == 0 {
		return 1
	}
	return float64(later) / float64(n)
}

// liveAttempts returns the node's running attempts not killed in this
// heartbeat, in start order (ties by id).
func liveAttempts(hb *policy.Heartbeat) []*policy.AttemptView {
	out := make([]*policy.AttemptView, 0, len(hb.Node.Running))
	for _, a := range hb.Node.Running {
		if !hb.Killed(a.ID) && a.Requested != nil {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(x, y *policy.AttemptView) int {
		return cmp.Or(cmp.Compare(x.StartS, y.StartS), cmp.Compare(x.ID, y.ID))
	})
	return out
}

// stolenDims returns the indexes of the named dimensions present in the
// cluster's resources, or of all dimensions if none is.
func stolenDims(names models.ResourceNames, want []string) []int {
	var out []int
	for _, w := range want {
		if k := names.Index(w); k >= 0 {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		for k := range names {
			out = append(out, k)
		}
	}
	return out
}

// split divides amount into len(to) whole parts (⌊amount/n⌋ each, one more
// for the first amount mod n) and hands part k to give(to[k], part).
func split(amount int64, to []int, give func(k int, v int64)) {
	n := int64(len(to))
	if n == 0 || amount <= 0 {
		return
	}
	for k, idx := range to {
		v := amount / n
		if int64(k) < amount%n {
			v++
		}
		if v > 0 {
			give(idx, v)
		}
	}
}

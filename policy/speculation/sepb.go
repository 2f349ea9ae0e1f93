package speculation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// SEPB is DynamicMR's Speculative Execution Performance Balancing (Tang et
// al., IEEE TCC 2014, §2.2): LATE's detection, with copies for a job J_i
// withheld while the next maxNumOfJobsCheckedForPendingTasks jobs have
// pending work, and stragglers killed at twice the average task time.
//
// maxNumOfJobsCheckedForPendingTasks = ⌈percentageOfJobsCheckedForPendingTasks
// · (number of active jobs)⌉ (the paper does not say how the product is
// rounded; with the ceiling any positive percentage checks at least J_i
// itself, and 0 checks nothing, which is plain LATE, the paper's baseline of
// Fig. 9). For a copy of type map in job J_i (jobs in submission order),
// with the window J_i .. J_{i+max−1}:
//
//	(1) J_i has no pending (or failed) map task;
//	(2) the window has pending map tasks;
//	(3) the window has pending reduce tasks and percentageOfBorrowedMapSlots > 0
//	    (a map slot could run them under DHSA);
//
// and J_i is skipped if (1) ∧ ((2) ∨ (3)). Reduce copies are symmetric
// (pending reduces; (3) with pending maps and percentageOfBorrowedReduceSlots).
//
// Kill rule: "when it took twice longer than the average execution time of
// tasks, we kill it directly to yield the slot": an attempt whose elapsed
// time exceeds KillFactor × the job's mean finished duration of its type is
// killed; the task becomes pending and is restarted first. A reduce is
// judged only once all its job's maps are done (before that it waits for
// map output, which is not straggling), and each task is killed at most
// MaxKillsPerTask times: a task that is long by nature (skew) would
// otherwise be killed and restarted forever, which the paper's heuristic,
// aimed at hard stragglers, does not intend.
type SEPB struct {
	*Speculation
	// PercentageOfJobsCheckedForPendingTasks ∈ [0, 1]; default 0.8 (the
	// paper recommends 60-100% and finds 80% best for five jobs, Fig. 9a).
	PercentageOfJobsCheckedForPendingTasks float64
	// PercentageOfBorrowedMapSlots/ReduceSlots: DHSA's percentages, read by
	// condition (3) (default 1, DHSA's default).
	PercentageOfBorrowedMapSlots, PercentageOfBorrowedReduceSlots float64
	// KillFactor (paper: 2) and MaxKillsPerTask (ours: 1; 0 disables kills).
	KillFactor      float64
	MaxKillsPerTask int
	kills           map[policy.TaskKey]int
}

var _ policy.Speculator = (*SEPB)(nil)
var _ policy.LaunchFilter = (*SEPB)(nil)
var _ policy.Tunable = (*SEPB)(nil)
var _ policy.Committer = (*SEPB)(nil)
var _ policy.Stateful = (*SEPB)(nil)

// NewSEPB returns SEPB on LATE with the defaults above.
func NewSEPB() *SEPB {
	late := NewLATE()
	late.name = NameSEPB
	s := &SEPB{Speculation: late, PercentageOfJobsCheckedForPendingTasks: 0.8,
		PercentageOfBorrowedMapSlots: 1, PercentageOfBorrowedReduceSlots: 1,
		KillFactor: 2, MaxKillsPerTask: 1, kills: map[policy.TaskKey]int{}}
	late.gates = []speculationGate{s}
	return s
}

func (s *SEPB) tunable() policy.ParamSet {
	return append(s.Speculation.tunable(),
		policy.FloatParam(&s.PercentageOfJobsCheckedForPendingTasks, policy.Param{Name: "percentage_of_jobs_checked_for_pending_tasks", Default: 0.8, Min: 0, Max: 1, Doc: "fraction of active jobs whose pending tasks hold back copies (§2.2)"}),
		policy.FloatParam(&s.KillFactor, policy.Param{Name: "kill_factor", Default: 2, Min: 1, Max: 10, Doc: "kill an attempt running longer than this × the mean task time (§2.2)"}),
		policy.IntParam(&s.MaxKillsPerTask, policy.Param{Name: "max_kills_per_task", Default: 1, Min: 0, Max: 10, Doc: "kills per task (0: no kill rule)"}))
}

// Params implements policy.Tunable.
func (s *SEPB) Params() []policy.Param { return s.tunable().Params() }

// SetParam implements policy.Tunable.
func (s *SEPB) SetParam(name string, v float64) error { return s.tunable().Set(NameSEPB, name, v) }

// Speculate implements policy.Speculator: the kills, then LATE's copies
// gated by the pending-task window.
func (s *SEPB) Speculate(hb *policy.Heartbeat) ([]policy.Action, []policy.Veto) {
	kills := s.killStragglers(hb)
	copies, vetoes := s.Speculation.Speculate(hb)
	return append(kills, copies...), vetoes
}

// Commit implements policy.Committer: a kill the pipeline accepted counts
// toward its task's MaxKillsPerTask.
func (s *SEPB) Commit(_ *policy.Heartbeat, a policy.Action, veto *policy.Veto) {
	if veto == nil && a.Kind == policy.ActionKill {
		s.kills[policy.TaskKey{Job: a.Job, Type: a.Type, Task: a.Task}]++
	}
}

func (s *SEPB) killStragglers(hb *policy.Heartbeat) []policy.Action {
	if s.MaxKillsPerTask == 0 {
		return nil
	}
	now := hb.Cluster.NowS
	var out []policy.Action
	var planned map[policy.TaskKey]int // kills decided in this call, counted by Commit once accepted
	for _, j := range hb.Cluster.Jobs {
		for _, a := range j.Running {
			mean := j.MeanDurationS(a.Type)
			if mean <= 0 || (a.Type == models.ReduceTask && j.MapsDone < j.MapsTotal) || hb.Killed(a.ID) {
				continue
			}
			id := a.TaskKey()
			if el := now - a.StartS; el > s.KillFactor*mean && s.kills[id]+planned[id] < s.MaxKillsPerTask {
				if planned == nil {
					planned = map[policy.TaskKey]int{}
				}
				planned[id]++
				out = append(out, policy.Action{Kind: policy.ActionKill, Job: a.Job, Type: a.Type, Task: a.Task, Attempt: a.ID, Node: a.Node,
					Reason: fmt.Sprintf("%s: attempt %d ran %.1fs > %g × mean %v time %.1fs; killed to yield its slot", NameSEPB, a.ID, el, s.KillFactor, a.Type, mean)})
			}
		}
	}
	return out
}

// allowCopy is the pending-task window test for a copy of a in job j.
func (s *SEPB) allowCopy(hb *policy.Heartbeat, j *policy.JobView, a *policy.AttemptView) (bool, string) {
	skip, why := s.SkipJob(hb.Cluster, j.ID, a.Type)
	return !skip, why
}

// SkipJob reports whether SEPB withholds copies of type t for job id, and why.
func (s *SEPB) SkipJob(c *policy.ClusterView, id string, t models.TaskType) (bool, string) {
	i := slices.IndexFunc(c.Jobs, func(j *policy.JobView) bool { return j.ID == id })
	if i < 0 {
		return false, ""
	}
	maxJobs := int(math.Ceil(s.PercentageOfJobsCheckedForPendingTasks*float64(len(c.Jobs)) - 1e-9))
	other, borrow := models.ReduceTask, s.PercentageOfBorrowedMapSlots
	if t == models.ReduceTask {
		other, borrow = models.MapTask, s.PercentageOfBorrowedReduceSlots
	}
	same, cross := 0, 0
	for _, j := range c.Jobs[i:min(len(c.Jobs), i+maxJobs)] {
		same += len(j.PendingOf(t))
		cross += len(j.PendingOf(other))
	}
	c1 := len(c.Jobs[i].PendingOf(t)) == 0
	c2 := same > 0
	c3 := cross > 0 && borrow > 0
	if c1 && (c2 || c3) {
		return true, fmt.Sprintf("%s: no %v copy for %s: jobs %d..%d of %d (max %d checked) have %d pending %v and %d pending %v tasks",
			NameSEPB, t, id, i+1, min(len(c.Jobs), i+maxJobs), len(c.Jobs), maxJobs, same, t, cross, other)
	}
	return false, ""
}

// Admit implements LaunchFilter: the window test applied to copies that
// other speculation add-ons propose (starts pass).
func (s *SEPB) Admit(hb *policy.Heartbeat, a policy.Action) (bool, string) {
	if a.Kind != policy.ActionSpeculate {
		return true, ""
	}
	skip, why := s.SkipJob(hb.Cluster, a.Job, a.Type)
	return !skip, why
}

// taskCount is a task and a count, the snapshot form of a map keyed by
// task (JSON objects have string keys).
type taskCount struct {
	Job   string          `json:"job"`
	Type  models.TaskType `json:"type"`
	Task  int             `json:"task"`
	Count int             `json:"count"`
}

// Snapshot implements policy.Stateful: the kills per task so far.
func (s *SEPB) Snapshot() ([]byte, error) {
	kills := make([]taskCount, 0, len(s.kills))
	for k, n := range s.kills {
		kills = append(kills, taskCount{k.Job, k.Type, k.Task, n})
	}
	slices.SortFunc(kills, func(a, b taskCount) int {
		return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Task, b.Task))
	})
	return json.Marshal(struct {
		Kills []taskCount `json:"kills"`
	}{kills})
}

// Restore implements policy.Stateful.
func (s *SEPB) Restore(data []byte) error {
	var st struct {
		Kills []taskCount `json:"kills"`
	}
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	s.kills = make(map[policy.TaskKey]int, len(st.Kills))
	for _, k := range st.Kills {
		if !k.Type.Valid() || k.Count < 1 {
			return fmt.Errorf("%w: %d kills of task %s/%v#%d", policy.ErrInvalidConfig, k.Count, k.Job, k.Type, k.Task)
		}
		s.kills[policy.TaskKey{Job: k.Job, Type: k.Type, Task: k.Task}] = k.Count
	}
	return nil
}

package policy

import (
	"math"

	"github.com/optd/optd/models"
)

// This file holds the estimates the speculation and sharing policies share:
// LATE's progress rate and time left (Zaharia et al., OSDI'08 §4; Guo et
// al., Cluster'12 Eqs. 1-2), the grouping of a job's attempts by task, and
// the tentative counts of the current heartbeat.

// ProgressRate is LATE's Eq. (1): ProgressScore / T, with T the time the
// attempt has run. It is 0 for an attempt that has not run yet (T ≤ 0).
func ProgressRate(a *AttemptView, nowS float64) float64 {
	t := nowS - a.StartS
	if t <= 0 {
		return 0
	}
	return a.Score / t
}

// TimeLeft is LATE's Eq. (2): (1 − ProgressScore) / ProgressRate, assuming
// the attempt keeps its rate. It is +Inf for an attempt without progress
// (rate 0) and 0 for a finished one.
func TimeLeft(a *AttemptView, nowS float64) float64 {
	if a.Score >= 1 {
		return 0
	}
	r := ProgressRate(a, nowS)
	if r <= 0 {
		return math.Inf(1)
	}
	return (1 - a.Score) / r
}

// taskID names one task of a job (job, type, index).
type taskID struct {
	job  string
	typ  models.TaskType
	task int
}

func taskOf(a *AttemptView) taskID { return taskID{a.Job, a.Type, a.Task} }

// attemptsPerTask counts the running attempts of each task of the job.
func attemptsPerTask(j *JobView) map[taskID]int {
	n := make(map[taskID]int, len(j.Running))
	for _, a := range j.Running {
		n[taskOf(a)]++
	}
	return n
}

// speculatedHere reports whether this heartbeat already decided a copy of
// the task (two speculation add-ons must not both copy it).
func speculatedHere(hb *Heartbeat, id taskID) bool {
	for _, a := range hb.Actions {
		if a.Kind == ActionSpeculate && a.Job == id.job && a.Type == id.typ && a.Task == id.task {
			return true
		}
	}
	return false
}

// killedHere reports whether this heartbeat already decided to kill attempt.
func killedHere(hb *Heartbeat, attempt int) bool {
	for _, a := range hb.Actions {
		if a.Kind == ActionKill && a.Attempt == attempt {
			return true
		}
	}
	return false
}

// tentativeStarts counts the starts (and copies) of type t for job this
// heartbeat decided so far.
func tentativeStarts(hb *Heartbeat, job string, t models.TaskType) int {
	n := 0
	for _, a := range hb.Actions {
		if (a.Kind == ActionStart || a.Kind == ActionSpeculate) && a.Job == job && a.Type == t {
			n++
		}
	}
	return n
}

// runningNow is the job's running attempts of type t including this
// heartbeat's starts.
func runningNow(hb *Heartbeat, j *JobView, t models.TaskType) int {
	return j.RunningOf(t) + tentativeStarts(hb, j.ID, t)
}

// pendingCount is the number of the job's tasks of type t that could start
// (reduces only after slow-start), ignoring this heartbeat's starts.
func pendingCount(j *JobView, t models.TaskType) int {
	if t == models.ReduceTask {
		if !j.SlowStartReached {
			return 0
		}
		return len(j.PendingReduces)
	}
	return len(j.PendingMaps)
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

// meanDuration is the job's mean finished duration of type t (0 if none).
func meanDuration(j *JobView, t models.TaskType) float64 {
	if t == models.ReduceTask {
		return j.MeanReduceS
	}
	return j.MeanMapS
}

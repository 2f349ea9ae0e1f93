package sim

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// ControlPlane is the scheduler a simulated cluster reports to and takes
// its actions from. In process it is the cluster's ledger.Scheduler (the
// pipeline on the ledger's views); `optd replay` implements it over optd's
// gRPC API, so the simulated cluster is driven exactly as a live executor
// drives optd, and both take the one path of ledger.Scheduler.Heartbeat.
// It is told, in simulated time, what the scheduler of a real cluster
// learns: each job's submission with its tasks and input blocks, each
// node's heartbeat with its running attempts' progress, each attempt's
// completion the moment it happens (Hadoop's out-of-band heartbeat, a
// report-only Beat) and each job's end.
type ControlPlane interface {
	Submit(ctx context.Context, job ledger.JobSpec) error
	// Heartbeat returns the decision on the node's heartbeat: the
	// simulator carries out its Applied actions in order (the attempts they
	// create numbered as the scheduler numbered them), and counts its
	// Rejected actions and Vetoes.
	Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error)
	JobFinished(ctx context.Context, nowS float64, job string) error
}

// inProcess is a ledger.Scheduler as the ControlPlane of a run.
type inProcess struct{ *ledger.Scheduler }

func (p inProcess) Submit(_ context.Context, job ledger.JobSpec) error {
	_, err := p.Scheduler.Submit(job)
	return err
}

// JobFinished does nothing: the ledger drops a job with its last task.
func (inProcess) JobFinished(context.Context, float64, string) error { return nil }

// jobSpec is what the executor tells the scheduler when job j arrives:
// every stage's tasks with the replicas of each map's input block.
func (s *clusterSim) jobSpec(j *simJob) ledger.JobSpec {
	spec := ledger.JobSpec{ID: j.spec.ID, SubmitS: j.spec.SubmitS, Queue: j.spec.Queue, Weight: j.spec.Weight,
		Demand: map[models.TaskType]models.Resources{}}
	for tt, d := range j.demand {
		if d != nil {
			spec.Demand[tt] = d
		}
	}
	for st := range j.spec.Stages {
		stage := ledger.StageSpec{Maps: make([][]string, len(j.works[st][0])), Reduces: len(j.works[st][1])}
		for i := range stage.Maps {
			stage.Maps[i] = []string{}
			if i < len(s.replicas[j.idx][st]) {
				for _, r := range s.replicas[j.idx][st][i] {
					stage.Maps[i] = append(stage.Maps[i], s.nodes[r].id)
				}
			}
		}
		spec.Stages = append(spec.Stages, stage)
	}
	return spec
}

// LedgerConfig is the scenario's cluster as a scheduler's ledger records it
// (defaults applied): what an executor registers with optd.
func (sc *ClusterScenario) LedgerConfig() ledger.Config {
	d := sc.withDefaults()
	return ledger.Config{Cluster: d.Cluster, SlowStart: d.SlowStart, ReduceRamp: d.ReduceRamp}
}

// VetoCount is how often a stage refused a job's candidates of one task
// type during a run (ClusterOptions.Explain), with the last reason.
type VetoCount struct {
	Stage string `json:"stage"`
	// Kind is "start" (a pending task) or "speculate" (a copy).
	Kind   string  `json:"kind"`
	Job    string  `json:"job"`
	Type   string  `json:"task_type"`
	Count  int     `json:"count"`
	FirstS float64 `json:"first_s"`
	LastS  float64 `json:"last_s"`
	Reason string  `json:"last_reason"`
}

// vetoLog aggregates a run's vetoes by stage, kind, job and task type.
type vetoLog struct {
	at map[[4]string]*VetoCount
}

func (l *vetoLog) add(now float64, vs []policy.Veto) {
	for _, v := range vs {
		k := [4]string{v.Stage, v.Kind.String(), v.Job, v.Type.String()}
		c := l.at[k]
		if c == nil {
			if l.at == nil {
				l.at = map[[4]string]*VetoCount{}
			}
			c = &VetoCount{Stage: k[0], Kind: k[1], Job: k[2], Type: k[3], FirstS: now}
			l.at[k] = c
		}
		c.Count++
		c.LastS, c.Reason = now, v.Reason
	}
}

// list returns the counts by stage, job, task type and kind.
func (l *vetoLog) list() []VetoCount {
	out := make([]VetoCount, 0, len(l.at))
	for _, c := range l.at {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b VetoCount) int {
		return strings.Compare(a.Stage+"\x00"+a.Job+"\x00"+a.Type+"\x00"+a.Kind, b.Stage+"\x00"+b.Job+"\x00"+b.Type+"\x00"+b.Kind)
	})
	return out
}

// diverged is the error of an action the simulator cannot carry out: the
// scheduler's record of the cluster and the simulator's disagree.
func (s *clusterSim) diverged(n *simNode, format string, args ...any) {
	if s.err == nil {
		s.err = fmt.Errorf("sim: heartbeat of node %q at %v s: the scheduler's state and the simulator's diverged: %s", n.id, s.eng.Now(), fmt.Sprintf(format, args...))
	}
}

package sim

import (
	"context"
	"fmt"
	"slices"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// Scheduler decides a cluster run's heartbeats in place of an in-process
// pipeline: `optd replay` implements it over optd's gRPC API, so the
// simulated cluster is driven exactly as a live executor drives optd. It is
// told, in simulated time, what the scheduler of a real cluster learns: each
// job's submission with its tasks and input blocks, each node's heartbeat
// with its running attempts' progress, each attempt's completion the moment
// it happens (Hadoop's out-of-band heartbeat) and each job's end.
type Scheduler interface {
	JobSubmitted(ctx context.Context, nowS float64, job ledger.JobSpec) error
	// Heartbeat returns node's actions; the simulator applies them with
	// the same rules as a pipeline's.
	Heartbeat(ctx context.Context, nowS float64, node string, running []ledger.Status) (HeartbeatAnswer, error)
	AttemptFinished(ctx context.Context, nowS float64, node string, attempt int) error
	JobFinished(ctx context.Context, nowS float64, job string) error
}

// HeartbeatAnswer is a Scheduler's answer to one heartbeat.
type HeartbeatAnswer struct {
	// Actions are the actions the scheduler applied to its own state, in
	// order.
	Actions []policy.Action
	// Started are the ids the scheduler gave the attempts its Start and
	// Speculate actions created, in order: the simulator numbers its own
	// attempts the same way and fails the run if they differ (the two
	// states diverged).
	Started []int
	// Rejected counts the actions the scheduler's policy decided and its
	// state refused (they are not in Actions).
	Rejected int
}

// remoteHeartbeat sends node n's heartbeat to the scheduler and applies its
// answer, checking that the simulator's ledger agrees with the scheduler's.
func (s *clusterSim) remoteHeartbeat(ctx context.Context, n *simNode, running []ledger.Status) error {
	ans, err := s.remote.Heartbeat(ctx, s.eng.Now(), n.id, running)
	if err != nil {
		return fmt.Errorf("sim: heartbeat of node %q at %v s: %w", n.id, s.eng.Now(), err)
	}
	rejected := s.rejected
	var started []int
	for _, a := range s.apply(n, ans.Actions) {
		if a.Kind == policy.ActionStart || a.Kind == policy.ActionSpeculate {
			started = append(started, a.Attempt)
		}
	}
	if s.rejected != rejected || !slices.Equal(started, ans.Started) {
		return fmt.Errorf("sim: heartbeat of node %q at %v s: the scheduler's state and the simulator's diverged (simulator refused %d of its %d actions; attempts %v, scheduler's %v)",
			n.id, s.eng.Now(), s.rejected-rejected, len(ans.Actions), started, ans.Started)
	}
	s.rejected += ans.Rejected
	return nil
}

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

// policyName names what decides, for errors.
func (s *clusterSim) policyName() string {
	if s.pipe == nil {
		return "remote scheduler"
	}
	return s.pipe.Spec()
}

// pipeRejected is the actions the pipeline itself dropped.
func (s *clusterSim) pipeRejected() int {
	if s.pipe == nil {
		return 0
	}
	return s.pipe.Rejected
}

// LedgerConfig is the scenario's cluster as a scheduler's ledger records it
// (defaults applied): what an executor registers with optd.
func (sc *ClusterScenario) LedgerConfig() ledger.Config {
	d := sc.withDefaults()
	return ledger.Config{Cluster: d.Cluster, SlowStart: d.SlowStart, ReduceRamp: d.ReduceRamp}
}

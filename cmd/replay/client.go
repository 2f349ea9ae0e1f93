package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
)

// executor is the reference executor: it is the simulated cluster's
// sim.ControlPlane through optd's ClusterService, so the simulated
// cluster's nodes and jobs are scheduled by the server exactly as a live
// cluster's would be.
type executor struct {
	client    optdv1.ClusterServiceClient
	cluster   string
	resources models.ResourceNames
	// explain asks every heartbeat for its vetoes.
	explain bool
	calls   int
}

var _ sim.ControlPlane = (*executor)(nil)

// registerRequest describes the scenario's cluster for RegisterCluster:
// its nodes (capacities, typed slots, racks) and the heartbeat policy with
// the scenario's slow start and ramp-up. It has no reduce slots for
// PlaceReduces: the cluster simulator places reduces through Heartbeat.
// With a placement policy (not nil), the cluster is registered with it
// too, and the server's pipeline places reducers by it.
func registerRequest(id string, cfg ledger.Config, spec string, placement *optdv1.PlacementPolicy, seed uint64) *optdv1.RegisterClusterRequest {
	names := cfg.Cluster.Resources
	slowStart := cfg.SlowStart
	req := &optdv1.RegisterClusterRequest{ClusterId: id, Heartbeat: &optdv1.HeartbeatPolicy{
		Spec: spec, Resources: names, SlowStart: &slowStart, ReduceRamp: cfg.ReduceRamp, Seed: seed}}
	for _, n := range cfg.Cluster.Nodes {
		req.Heartbeat.TypedSlots = req.Heartbeat.TypedSlots || n.MapSlots+n.ReduceSlots > 0
		req.Nodes = append(req.Nodes, &optdv1.Node{Id: n.ID, Rack: n.Rack, Capacity: n.Capacity.ByName(names),
			MapSlots: int32(n.MapSlots), ReduceSlots: int32(n.ReduceSlots)})
	}
	req.Policy = placement
	return req
}

// placementPolicy is the placement policy the cluster is registered with
// (nil without --placement): the spec's name and parameters, the seed, and
// with --placement-model the queueing model of that placement scenario
// file (its slot costs too: the heartbeat cluster registers no reduce
// slots of its own), as 'optd simulate' builds the policy.
func placementPolicy(o options) (*optdv1.PlacementPolicy, error) {
	if o.placement == "" {
		if o.placementModel != "" {
			return nil, fmt.Errorf("--placement-model %s: give --placement too (the model is for the placement policy)", o.placementModel)
		}
		return nil, nil
	}
	name, params, err := policy.ParsePlacementSpec(o.placement)
	if err != nil {
		return nil, fmt.Errorf("--placement: %w", err)
	}
	out := &optdv1.PlacementPolicy{Name: name, Params: params, Seed: o.seed}
	if o.placementModel == "" {
		return out, nil
	}
	ps, err := sim.LoadScenario(o.placementModel)
	if err != nil {
		return nil, fmt.Errorf("--placement-model: %w", err)
	}
	law, err := json.Marshal(ps.Workload)
	if err != nil {
		return nil, fmt.Errorf("--placement-model %s: workload: %w", o.placementModel, err)
	}
	m := &optdv1.PlacementModel{ArrivalRate: ps.ArrivalRate, ServiceRate: ps.ServiceRate, MaxJobsInService: int32(ps.K),
		Seed: ps.Seed, SlotCosts: ps.SlotCosts}
	// The typed message where the law fits it, else its JSON text (the
	// server accepts either).
	var w optdv1.Workload
	if protojson.Unmarshal(law, &w) == nil {
		m.Workload = &w
	} else {
		m.WorkloadJson = string(law)
	}
	if ps.MaxWaiting >= 0 {
		waiting := int32(ps.MaxWaiting)
		m.MaxWaiting = &waiting
	}
	out.Model = m
	return out, nil
}

// Submit implements sim.ControlPlane.
func (x *executor) Submit(ctx context.Context, job ledger.JobSpec) error {
	req := &optdv1.SubmitJobRequest{ClusterId: x.cluster, JobId: job.ID, SubmitS: &job.SubmitS, Queue: job.Queue, Weight: job.Weight,
		MapDemand: job.Demand[models.MapTask].ByName(x.resources), ReduceDemand: job.Demand[models.ReduceTask].ByName(x.resources)}
	for _, st := range job.Stages {
		stage := &optdv1.JobStage{Reduces: int32(st.Reduces)}
		for _, reps := range st.Maps {
			stage.Maps = append(stage.Maps, &optdv1.MapInput{Nodes: reps})
		}
		req.Stages = append(req.Stages, stage)
	}
	if len(job.Stages) > 0 {
		req.Maps, req.Reduces = int32(len(job.Stages[0].Maps)), int32(job.Stages[0].Reduces)
	}
	x.calls++
	_, err := x.client.SubmitJob(ctx, req)
	return err
}

// Heartbeat implements sim.ControlPlane: one Heartbeat call (an
// out-of-band, report-only one for a completion).
func (x *executor) Heartbeat(ctx context.Context, b ledger.Beat) (*ledger.Decision, error) {
	req := &optdv1.HeartbeatRequest{ClusterId: x.cluster, NodeId: b.Node, NowS: &b.NowS, ReportOnly: b.ReportOnly, Explain: x.explain}
	for _, s := range b.Running {
		req.Running = append(req.Running, &optdv1.AttemptStatus{AttemptId: int64(s.Attempt), Phase: s.Phase.String(), Progress: s.Progress, FetchMbps: s.FetchMBps})
	}
	for _, id := range b.Finished {
		req.Finished = append(req.Finished, int64(id))
	}
	for _, id := range b.Failed {
		req.Failed = append(req.Failed, int64(id))
	}
	for id, mb := range b.OutputMB {
		if req.OutputMb == nil {
			req.OutputMb = map[int64]float64{}
		}
		req.OutputMb[int64(id)] = mb
	}
	x.calls++
	resp, err := x.client.Heartbeat(ctx, req)
	if err != nil {
		return nil, err
	}
	d := &ledger.Decision{Rejected: int(resp.GetRejected()), JobsDone: resp.GetFinishedJobs()}
	for i, a := range resp.GetActions() {
		act, err := x.action(b.Node, a)
		if err != nil {
			return nil, fmt.Errorf("actions[%d]: %w", i, err)
		}
		d.Applied = append(d.Applied, ledger.Applied{Action: act, Source: int(a.GetSourceAttemptId())})
	}
	for i, v := range resp.GetVetoes() {
		veto, err := vetoOf(v)
		if err != nil {
			return nil, fmt.Errorf("vetoes[%d]: %w", i, err)
		}
		d.Vetoes = append(d.Vetoes, veto)
	}
	return d, nil
}

var actionKinds = func() map[string]policy.ActionKind {
	m := map[string]policy.ActionKind{}
	for k := policy.ActionStart; k <= policy.ActionSlots; k++ {
		m[k.String()] = k
	}
	return m
}()

// action converts an API action into what the simulator carries out (the
// attempt of a start or speculate is the one the server created).
func (x *executor) action(node string, a *optdv1.Action) (policy.Action, error) {
	kind, ok := actionKinds[a.GetKind()]
	if !ok {
		return policy.Action{}, fmt.Errorf("unknown action kind %q", a.GetKind())
	}
	out := policy.Action{Kind: kind, Job: a.GetJobId(), Task: int(a.GetTask()), Attempt: int(a.GetAttemptId()), Node: node,
		MapSlots: int(a.GetMapSlots()), ReduceSlots: int(a.GetReduceSlots()), Reason: a.GetReason()}
	if t := a.GetTaskType(); t != "" {
		if err := out.Type.UnmarshalText([]byte(t)); err != nil {
			return out, err
		}
	}
	if s := a.GetSlot(); s != "" {
		if err := out.Slot.UnmarshalText([]byte(s)); err != nil {
			return out, err
		}
	}
	if len(a.GetResources()) > 0 {
		out.Resources = make(models.Resources, len(x.resources))
		for name, v := range a.GetResources() {
			p := x.resources.Index(name)
			if p < 0 || v != math.Trunc(v) {
				return out, fmt.Errorf("resources[%q] = %v: not a whole amount of one of the cluster's resources", name, v)
			}
			out.Resources[p] = int64(v)
		}
	}
	return out, nil
}

// vetoOf converts an API veto.
func vetoOf(v *optdv1.Veto) (policy.Veto, error) {
	kind, ok := actionKinds[v.GetKind()]
	if !ok {
		return policy.Veto{}, fmt.Errorf("unknown action kind %q", v.GetKind())
	}
	out := policy.Veto{Stage: v.GetStage(), Kind: kind, Job: v.GetJobId(), Task: int(v.GetTask()), Attempt: int(v.GetSourceAttemptId()), Reason: v.GetReason()}
	if t := v.GetTaskType(); t != "" {
		if err := out.Type.UnmarshalText([]byte(t)); err != nil {
			return out, err
		}
	}
	return out, nil
}

// JobFinished implements sim.ControlPlane.
func (x *executor) JobFinished(ctx context.Context, _ float64, job string) error {
	x.calls++
	_, err := x.client.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: x.cluster, JobId: job})
	return err
}

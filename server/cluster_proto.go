package server

import (
	"cmp"
	"slices"

	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// stateProto converts a cluster's state to its API form.
func stateProto(c *cluster) *optdv1.ClusterState {
	st := c.st
	out := &optdv1.ClusterState{
		ClusterId:    st.Cluster.ID,
		Policy:       policyProto(st.Cluster.Policy),
		FreeSlots:    int32(c.nFree()),
		FinishedJobs: st.Meta.Finished,
	}
	for _, n := range st.Cluster.Nodes {
		out.Nodes = append(out.Nodes, &optdv1.Node{Id: n.ID, Rack: n.Rack, Capacity: n.Capacity, ReduceSlots: int32(n.ReduceSlots), MapSlots: int32(n.MapSlots)})
	}
	out.Slots = make([]*optdv1.ReduceSlot, len(st.Cluster.Slots))
	for v, sl := range st.Cluster.Slots {
		out.Slots[v] = &optdv1.ReduceSlot{NodeId: sl.Node, FetchCost: sl.FetchCost}
	}
	jobs := slices.SortedFunc(slices.Values(st.Jobs), func(a, b store.Job) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, j := range jobs {
		js := &optdv1.JobState{JobId: j.ID, Maps: int32(j.Maps), Reduces: int32(j.Reduces), JobsInSystem: int32(j.JobsInSystem),
			Placed: j.Placed, DataMb: j.DataMB, SubmitSeq: j.Seq}
		for _, v := range j.Slots {
			js.Slots = append(js.Slots, int32(v))
		}
		out.Jobs = append(out.Jobs, js)
	}
	if h := st.Cluster.Heartbeat; h != nil {
		slowStart := h.SlowStart
		out.Heartbeat = &optdv1.HeartbeatPolicy{Spec: h.Spec, Resources: h.Resources, SlowStart: &slowStart, ReduceRamp: h.ReduceRamp, Seed: h.Seed, TypedSlots: h.TypedSlots}
		out.ActiveJobs, out.RunningAttempts = int32(c.sched.Ledger.Active()), int32(c.sched.Ledger.Running())
	}
	if e, ok := c.policy.(policy.Estimating); ok {
		est := e.Estimator()
		es := &optdv1.EstimatorState{Window: int32(est.Window()), Seen: est.Seen() + c.seenOffset}
		if v, ok := est.Estimate(); ok {
			es.Samples = int32(v.Samples)
			es.MeanJobs, es.MeanY, es.P, es.Threshold = &v.MeanJobs, &v.MeanY, &v.P, &v.Threshold
		}
		out.Estimator = es
	}
	return out
}

// policyProto converts a cluster's placement policy to its API form.
func policyProto(p store.Policy) *optdv1.PlacementPolicy {
	out := &optdv1.PlacementPolicy{Name: p.Name, Window: int32(p.Window), Horizon: int32(p.Horizon), Seed: p.Seed, Params: p.Params}
	if m := p.Model; m != nil {
		out.Model = &optdv1.PlacementModel{ArrivalRate: m.ArrivalRate, ServiceRate: m.ServiceRate, MaxJobsInService: int32(m.MaxJobsInService),
			WorkloadJson: string(m.Workload), Seed: m.Seed, SlotCosts: m.SlotCosts}
		// The stored workload passed the decoder; should it not fit the
		// message (a field the message lacks), the JSON text still says it.
		var w optdv1.Workload
		if err := resultMessage(m.Workload, &w); err == nil {
			out.Model.Workload = &w
		}
		if m.MaxWaiting >= 0 {
			w := int32(m.MaxWaiting)
			out.Model.MaxWaiting = &w
		}
	}
	return out
}

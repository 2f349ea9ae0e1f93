package server

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	_ "github.com/optd/optd/policy/builtin" // every policy a cluster may name
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// The Heartbeat RPC: the cluster's ledger (package ledger) and heartbeat
// pipeline decide a node's actions; every change is an event appended to
// the cluster's durable log, which rebuilds the ledger on load.

// noChange is the change of a call that changed nothing durable and whose
// answer does not depend on changes still being committed (see change).
var noChange = &store.Change{}

// dirty is the change of a call that failed after it began changing the
// cluster in memory: change drops the cluster, to be reloaded.
var dirty = &store.Change{}

// defaultSlowStart is Hadoop's mapreduce.job.reduce.slowstart.completedmaps.
const defaultSlowStart = 0.05

// heartbeatFromRequest validates RegisterCluster's heartbeat policy (nil if
// none) against the cluster's nodes.
func heartbeatFromRequest(req *optdv1.RegisterClusterRequest, nodes []store.Node) (*store.HeartbeatPolicy, error) {
	hp := req.GetHeartbeat()
	if hp == nil {
		return nil, nil
	}
	h := &store.HeartbeatPolicy{Spec: hp.GetSpec(), Resources: hp.GetResources(), SlowStart: defaultSlowStart,
		ReduceRamp: hp.GetReduceRamp(), Seed: hp.GetSeed(), TypedSlots: hp.GetTypedSlots()}
	if hp.SlowStart != nil {
		h.SlowStart = hp.GetSlowStart()
	}
	if !(h.SlowStart >= 0 && h.SlowStart <= 1) {
		return nil, invalid("heartbeat.slow_start", h.SlowStart, "must be in [0, 1]")
	}
	if _, err := policy.NewPipeline(h.Spec, policy.HeartbeatConfig{Seed: h.Seed}); err != nil {
		return nil, invalid("heartbeat.spec", h.Spec, "%v", err)
	}
	names := models.ResourceNames(h.Resources)
	if err := names.Validate(); err != nil {
		return nil, invalid("heartbeat.resources", h.Resources, "%v", err)
	}
	cfg, err := ledgerConfig(nodes, h) // checks every capacity against the names
	if err == nil {
		_, err = ledger.New(cfg)
	}
	if err != nil {
		return nil, err
	}
	for i, n := range nodes {
		for _, name := range names {
			if _, ok := n.Capacity[name]; !ok {
				return nil, invalid(fieldf("nodes[%d].capacity", i), fmt.Sprint(n.Capacity), "has no %q, one of heartbeat.resources %v (give 0 if the node has none)", name, []string(names))
			}
		}
	}
	return h, nil
}

// resources converts a per-name amount map to a vector over names: every
// amount integral, finite and ≥ 0, absent names 0.
func resources(names models.ResourceNames, m map[string]float64, field string) (models.Resources, error) {
	r := make(models.Resources, len(names))
	for name, v := range m {
		p := names.Index(name)
		if p < 0 {
			return nil, invalid(field, name, "is not one of the cluster's resources %v", []string(names))
		}
		if !finiteNonNeg(v) || v != math.Trunc(v) || v > math.MaxInt64/2 {
			return nil, invalid(fieldf("%s[%q]", field, name), v, "must be a whole number ≥ 0")
		}
		r[p] = int64(v)
	}
	return r, nil
}

// ledgerConfig is the ledger's view of a stored cluster (a node without a
// rack is a rack of its own, named after it; typed slots only with
// TypedSlots, as a node's reduce_slots also count PlaceReduces' slots).
func ledgerConfig(nodes []store.Node, h *store.HeartbeatPolicy) (ledger.Config, error) {
	names := models.ResourceNames(h.Resources)
	cfg := ledger.Config{Cluster: models.Cluster{Resources: names}, SlowStart: h.SlowStart, ReduceRamp: h.ReduceRamp}
	for i, n := range nodes {
		c, err := resources(names, n.Capacity, fieldf("nodes[%d].capacity", i))
		if err != nil {
			return cfg, err
		}
		if n.MapSlots < 0 {
			return cfg, invalid(fieldf("nodes[%d].map_slots", i), n.MapSlots, "must be ≥ 0")
		}
		rack := n.Rack
		if rack == "" {
			rack = n.ID
		}
		node := models.Node{ID: n.ID, Rack: rack, Capacity: c}
		if h.TypedSlots {
			node.MapSlots, node.ReduceSlots = n.MapSlots, n.ReduceSlots
		}
		cfg.Cluster.Nodes = append(cfg.Cluster.Nodes, node)
	}
	return cfg, nil
}

// newScheduler rebuilds a cluster's heartbeat scheduler from its stored
// configuration and event log (nil if the cluster has no heartbeat policy);
// a heartbeat starts at most maxStarts tasks (limits.max_starts_per_heartbeat).
func newScheduler(st *store.State, maxStarts int) (*ledger.Scheduler, error) {
	h := st.Cluster.Heartbeat
	if h == nil {
		return nil, nil
	}
	cfg, err := ledgerConfig(st.Cluster.Nodes, h)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster %q: heartbeat configuration: %w", store.ErrCorrupt, st.Cluster.ID, err)
	}
	l, err := ledger.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster %q: heartbeat configuration: %w", store.ErrCorrupt, st.Cluster.ID, err)
	}
	hc := policy.HeartbeatConfig{Seed: h.Seed, MaxStarts: maxStarts}
	if h.PlaceReduces {
		// The pipeline's own instance: PlaceReduces keeps its estimator
		// apart, and the pipeline's goes into its snapshot.
		if hc.Placement, err = newPlacement(context.Background(), st.Cluster.Policy, st.Cluster.Slots, true); err != nil {
			return nil, fmt.Errorf("%w: cluster %q: %w", store.ErrCorrupt, st.Cluster.ID, err)
		}
	}
	pipe, err := policy.NewPipeline(h.Spec, hc)
	if err != nil {
		return nil, fmt.Errorf("%w: cluster %q: heartbeat.spec: %w", store.ErrCorrupt, st.Cluster.ID, err)
	}
	for i, data := range st.Log {
		ev, err := ledger.DecodeEvent(data)
		if err == nil {
			err = l.Replay(ev)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: cluster %q: event %d of its log: %w", store.ErrCorrupt, st.Cluster.ID, i, err)
		}
	}
	if err := pipe.Restore(st.PolicyState); err != nil {
		return nil, fmt.Errorf("%w: cluster %q: heartbeat policy state: %w", store.ErrCorrupt, st.Cluster.ID, err)
	}
	return &ledger.Scheduler{Ledger: l, Pipe: pipe}, nil
}

// policyChange puts the pipeline's snapshot in ch if it differs from the
// last one stored or queued: a heartbeat may teach the pipeline something
// (a delay clock, a phase track, the ITA plan) without changing the ledger,
// and a restarted server must decide as this one would.
func (c *cluster) policyChange(ch *store.Change) error {
	data, err := c.sched.Pipe.Snapshot()
	if err != nil {
		return err
	}
	if !bytes.Equal(data, c.policyState) {
		ch.PolicyState, c.policyState = data, data
	}
	return nil
}

// Event-log compaction: the cluster's event log is replaced by a
// checkpoint of its ledger (ledger.Checkpoint, one event that rebuilds it)
// when the ledger is idle, or once the events appended since the last
// checkpoint outweigh it compactRatio times and are more than
// compactMinBytes. The log then holds at most about (1+compactRatio) times
// the live state (the checkpoint is its size), so that disk and the replay
// at restart follow the live state, even with a job always active; and
// each checkpoint is paid for by compactRatio times its size in events.
const (
	compactRatio    = 2
	compactMinBytes = 64 << 10
)

// logChange turns a call's ledger events (already applied to the ledger)
// into the store change appending them, or replacing the log with a
// checkpoint (see compactRatio).
func (c *cluster) logChange(ch *store.Change, events ...ledger.Event) error {
	if len(events) == 0 {
		return nil
	}
	var encoded [][]byte
	size := 0
	for _, ev := range events {
		data, err := ev.Encode()
		if err != nil {
			return err
		}
		encoded, size = append(encoded, data), size+len(data)
	}
	cp, idle := c.sched.Ledger.Snapshot()
	if !idle && c.logBytes+size <= max(compactMinBytes, compactRatio*c.checkpointBytes) {
		ch.Log = append(ch.Log, encoded...)
		c.logBytes += size
		return nil
	}
	if !idle {
		cp = c.sched.Ledger.Checkpoint()
	}
	data, err := cp.Encode()
	if err != nil {
		return err
	}
	ch.TruncateLog, ch.Log = true, [][]byte{data}
	c.logBytes, c.checkpointBytes = 0, len(data)
	return nil
}

// nowS is an optional executor time, else the server's clock.
func nowS(t *float64) float64 {
	if t != nil {
		return *t
	}
	return float64(time.Now().UnixNano()) / 1e9
}

// jobSpec converts SubmitJob's task description for the ledger.
func jobSpec(req *optdv1.SubmitJobRequest, h *store.HeartbeatPolicy, lim Limits) (ledger.JobSpec, error) {
	spec := ledger.JobSpec{ID: req.GetJobId(), SubmitS: nowS(req.SubmitS), Queue: req.GetQueue(), Weight: req.GetWeight(),
		Demand: map[models.TaskType]models.Resources{}}
	if req.SubmitS != nil {
		if err := checkClock("submit_s", spec.SubmitS); err != nil {
			return spec, err
		}
	}
	if !finiteNonNeg(spec.Weight) {
		return spec, invalid("weight", spec.Weight, "must be a finite number ≥ 0 (0 or absent: 1)")
	}
	names := models.ResourceNames(h.Resources)
	for _, d := range []struct {
		t     models.TaskType
		field string
		m     map[string]float64
	}{{models.MapTask, "map_demand", req.GetMapDemand()}, {models.ReduceTask, "reduce_demand", req.GetReduceDemand()}} {
		r, err := resources(names, d.m, d.field)
		if err != nil {
			return spec, err
		}
		spec.Demand[d.t] = r
	}
	stages := req.GetStages()
	tasks := int64(0)
	for _, st := range stages {
		tasks += int64(len(st.GetMaps())) + max(int64(st.GetReduces()), 0)
	}
	if len(stages) == 0 {
		tasks = int64(req.GetMaps()) + max(int64(req.GetReduces()), 0)
	}
	if tasks > int64(lim.MaxTasks) {
		return spec, overLimit("tasks (all stages)", tasks, "limits.max_tasks", lim.MaxTasks)
	}
	if len(stages) == 0 {
		stages = []*optdv1.JobStage{{Maps: make([]*optdv1.MapInput, max(req.GetMaps(), 0)), Reduces: req.GetReduces()}}
	}
	for s, st := range stages {
		if st.GetReduces() < 0 {
			return spec, invalid(fieldf("stages[%d].reduces", s), st.GetReduces(), "must be ≥ 0")
		}
		stage := ledger.StageSpec{Maps: make([][]string, len(st.GetMaps())), Reduces: int(st.GetReduces())}
		for m, in := range st.GetMaps() {
			stage.Maps[m] = in.GetNodes()
		}
		spec.Stages = append(spec.Stages, stage)
	}
	if given := req.GetStages(); len(given) > 0 {
		if n := len(given[0].GetMaps()); int(req.GetMaps()) != n {
			return spec, invalid("maps", req.GetMaps(), "stages[0] lists %d maps (with stages, maps and reduces are those of the first stage)", n)
		}
		if n := given[0].GetReduces(); req.GetReduces() != n {
			return spec, invalid("reduces", req.GetReduces(), "stages[0].reduces is %d (with stages, maps and reduces are those of the first stage)", n)
		}
	}
	return spec, nil
}

// beat converts a Heartbeat request.
func beat(req *optdv1.HeartbeatRequest) (ledger.Beat, error) {
	b := ledger.Beat{Node: req.GetNodeId(), NowS: nowS(req.NowS), ReportOnly: req.GetReportOnly()}
	if req.NowS != nil {
		if err := checkClock("now_s", b.NowS); err != nil {
			return b, err
		}
	}
	for i, s := range req.GetRunning() {
		name, ok := phaseOf(s)
		if !ok {
			return b, invalid(fieldf("running[%d].phase_type", i), s.GetPhaseType(), "must be a known phase, and phase (%q), if also given, the same", s.GetPhase())
		}
		var ph models.Phase
		if err := ph.UnmarshalText([]byte(name)); err != nil || ph == models.PhasePending {
			return b, invalid(fieldf("running[%d].phase", i), name, `must be "map", "shuffle", "sort" or "reduce"`)
		}
		b.Running = append(b.Running, ledger.Status{Attempt: attemptID(s.GetAttemptId()), Phase: ph, Progress: s.GetProgress(), FetchMBps: s.GetFetchMbps()})
	}
	for _, id := range req.GetFinished() {
		b.Finished = append(b.Finished, attemptID(id))
	}
	for _, id := range req.GetFailed() {
		b.Failed = append(b.Failed, attemptID(id))
	}
	if out := req.GetOutputMb(); len(out) > 0 {
		b.OutputMB = make(map[int]float64, len(out))
		for id, mb := range out {
			b.OutputMB[attemptID(id)] = mb
		}
	}
	return b, nil
}

// attemptID maps an API attempt id to the ledger's (a non-positive id maps
// to 0, which is never an attempt).
func attemptID(id int64) int {
	if id <= 0 {
		return 0
	}
	return int(id)
}

// actionProto converts an applied action.
func actionProto(a ledger.Applied, names models.ResourceNames) *optdv1.Action {
	out := &optdv1.Action{Kind: a.Kind.String(), JobId: a.Job, Task: int32(a.Task), AttemptId: int64(a.Attempt),
		SourceAttemptId: int64(a.Source), Reason: a.Reason, Resources: a.Resources.ByName(names)}
	if a.Type.Valid() {
		out.TaskType = a.Type.String()
	}
	if a.Slot.Valid() {
		out.Slot = a.Slot.String()
	}
	if a.Kind == policy.ActionSlots {
		out.MapSlots, out.ReduceSlots = int32(a.MapSlots), int32(a.ReduceSlots)
	}
	if a.Locality != policy.LocalityNone {
		out.Locality = a.Locality.String()
	}
	return out
}

// vetoProto converts a veto.
func vetoProto(v policy.Veto) *optdv1.Veto {
	out := &optdv1.Veto{Stage: v.Stage, Kind: v.Kind.String(), JobId: v.Job, Task: int32(v.Task), SourceAttemptId: int64(v.Attempt), Reason: v.Reason}
	if v.Type.Valid() {
		out.TaskType = v.Type.String()
	}
	return out
}

// Heartbeat implements optd.v1.ClusterService: the node's completions,
// failures and progress are recorded, then (unless report_only) the
// cluster's heartbeat policy decides the node's actions. Everything the call
// changed is durable before it returns.
func (s *ClusterService) Heartbeat(ctx context.Context, req *optdv1.HeartbeatRequest) (*optdv1.HeartbeatResponse, error) {
	if err := checkID("cluster_id", req.GetClusterId()); err != nil {
		return nil, err
	}
	if err := checkID("node_id", req.GetNodeId()); err != nil {
		return nil, err
	}
	if n := len(req.GetRunning()) + len(req.GetFinished()) + len(req.GetFailed()); n > s.limits.MaxSlots {
		return nil, overLimit("len(running)+len(finished)+len(failed)", n, "limits.max_slots", s.limits.MaxSlots)
	}
	b, err := beat(req)
	if err != nil {
		return nil, err
	}
	return change(ctx, s, req.GetClusterId(), func(e *clusterEntry) (*optdv1.HeartbeatResponse, *store.Change, error) {
		sch := e.c.sched
		if sch == nil {
			return nil, nil, fmt.Errorf("%w: cluster %q was registered without a heartbeat policy (RegisterCluster.heartbeat)", ErrPrecondition, req.GetClusterId())
		}
		last, seen := e.c.beats[req.GetNodeId()]
		switch seq := req.GetSeq(); {
		case seq == 0 || !seen:
		case seq == last.seq:
			// A retry: the same answer, once its change is durable.
			again := proto.Clone(last.resp).(*optdv1.HeartbeatResponse)
			again.Retried = true
			return again, nil, nil
		case seq < last.seq:
			return nil, nil, fmt.Errorf("%w: seq = %d: node %q's last heartbeat had seq %d (a heartbeat's seq increases)", ErrPrecondition, seq, req.GetNodeId(), last.seq)
		}
		if last, ok := e.c.lastNowS[b.Node]; ok && b.NowS < last {
			return nil, nil, invalid("now_s", b.NowS, "before node %q's last heartbeat at now_s = %v (the executor's clock never goes back)", b.Node, last)
		}
		resp, ch, err := s.decideHeartbeat(ctx, e, req, b)
		if err != nil {
			return resp, ch, err
		}
		if err := e.c.rememberBeat(b.Node, req.GetSeq(), b.NowS, resp, ch); err != nil {
			return nil, dirty, err
		}
		return resp, ch, nil
	})
}

// beatAnswer is a node's last heartbeat with a seq, and its answer.
type beatAnswer struct {
	seq  uint64
	resp *optdv1.HeartbeatResponse
}

// decideHeartbeat records and decides a heartbeat on the locked cluster.
func (s *ClusterService) decideHeartbeat(ctx context.Context, e *clusterEntry, req *optdv1.HeartbeatRequest, b ledger.Beat) (*optdv1.HeartbeatResponse, *store.Change, error) {
	sch := e.c.sched
	start := time.Now()
	d, err := sch.Heartbeat(ctx, b)
	s.metrics.solverTime("heartbeat", start)
	if err != nil {
		if d != nil {
			return nil, dirty, err // partly applied
		}
		return nil, nil, err
	}
	s.metrics.vetoed(d.Vetoes)
	resp := &optdv1.HeartbeatResponse{Rejected: int32(d.Rejected), FinishedJobs: d.JobsDone}
	if req.GetExplain() {
		for _, v := range d.Vetoes {
			resp.Vetoes = append(resp.Vetoes, vetoWithEnums(vetoProto(v)))
		}
	}
	ch := &store.Change{}
	if err := e.c.policyChange(ch); err != nil {
		return nil, dirty, err
	}
	if len(d.Events) == 0 && len(d.Applied) == 0 && len(d.JobsDone) == 0 && ch.PolicyState == nil {
		if len(resp.Vetoes) > 0 {
			return resp, nil, nil // a read: the reasons tell of state that must be durable first
		}
		// Nothing to do and nothing changed (progress is soft state):
		// the answer is right whatever becomes of the changes other
		// calls are still committing, so it need not wait for them.
		return resp, noChange, nil
	}
	if err := e.c.logChange(ch, d.Events...); err != nil {
		return nil, dirty, err
	}
	names := e.c.st.Cluster.Heartbeat.Resources
	for _, a := range d.Applied {
		resp.Actions = append(resp.Actions, withEnums(actionProto(a, names)))
	}
	if len(d.Applied) > 0 {
		s.metrics.decision(sch.Pipe.Spec())
	}
	return resp, ch, nil
}

// checkFits refuses a job with a task type whose container fits no node
// of the cluster: it would wait forever and keep the cluster from ever
// being idle.
func (c *cluster) checkFits(spec ledger.JobSpec) error {
	if c.capacities == nil {
		names := models.ResourceNames(c.st.Cluster.Heartbeat.Resources)
		for i, n := range c.st.Cluster.Nodes {
			r, err := resources(names, n.Capacity, fieldf("nodes[%d].capacity", i))
			if err != nil {
				return err // unreachable: checked at registration
			}
			c.capacities = append(c.capacities, r)
		}
	}
	for _, t := range []struct {
		typ   models.TaskType
		field string
	}{{models.MapTask, "map_demand"}, {models.ReduceTask, "reduce_demand"}} {
		d := spec.Demand[t.typ]
		if len(d) == 0 || !hasTasks(spec, t.typ) {
			continue
		}
		fits := false
		for _, capacity := range c.capacities {
			if d.Fits(capacity) {
				fits = true
				break
			}
		}
		if !fits {
			return invalid(t.field, d.ByName(c.st.Cluster.Heartbeat.Resources), "fits no node of the cluster (a task would wait forever)")
		}
	}
	return nil
}

// hasTasks reports whether some stage of the job has tasks of type t.
func hasTasks(spec ledger.JobSpec, t models.TaskType) bool {
	for _, st := range spec.Stages {
		if (t == models.MapTask && len(st.Maps) > 0) || (t == models.ReduceTask && st.Reduces > 0) {
			return true
		}
	}
	return false
}

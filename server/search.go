package server

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/search"
)

// The Search RPC: `optd search` for one unsharded search (package search),
// over a typed placement or cluster scenario. The choices that differ by
// scenario kind are those of the command: a placement scenario tunes a
// placement family for the mean cost per job against the references
// receding-horizon and greedy with the hindsight-LP and empty-cluster
// bounds; a cluster scenario tunes a heartbeat pipeline for the makespan
// (or the mean response time) with no reference unless asked.

// Defaults and bounds of a SearchRequest.
const (
	// objectiveMeanCost is the objective on a placement scenario (`optd
	// search`'s ObjectiveMeanCost, which the server may not import).
	objectiveMeanCost = "mean-cost"
	// defaultSearchClasses is `optd search --hindsight-classes`' default:
	// the exact hindsight LP of a large scenario takes minutes per
	// validation replication, 100 cost classes seconds, still a bound.
	defaultSearchClasses = 100
	// maxSearchEvaluations bounds a request's budget: each evaluation
	// simulates every replication, and the call must end in
	// limits.max_solve_time anyway.
	maxSearchEvaluations = 10_000
	// kinds of scenario, as `optd search` prints them.
	kindPlacement = "placement"
	kindCluster   = "cluster"
)

// defaultPlacementReferences are `optd search --references`' default.
var defaultPlacementReferences = []string{placement.NameRecedingHorizon, placement.NameGreedy}

// searchTarget is what one Search tunes.
type searchTarget struct {
	kind, objective string
	prob            search.Problem
	// replications when the request gives none.
	replications int
	// jobs is the jobs of one replication, for limits.max_simulated_jobs.
	jobs int
}

// Search implements optd.v1.OptimizeService: the search streams its
// progress (evaluations of the budget and the best objective; then the
// validation's simulations), then the result. The call is bounded by
// limits.max_solve_time and its deadline (DEADLINE_EXCEEDED: nothing is
// returned), time_limit_ms by ending the search phase early (the
// validation still runs).
func (s *OptimizeService) Search(req *optdv1.SearchRequest, stream grpc.ServerStreamingServer[optdv1.SearchResponse]) error {
	// The bound starts before the target: checking a placement target
	// builds its policies (a fitted family's fit, mdp-optimal's solve).
	ctx, cancel := context.WithTimeout(stream.Context(), s.limits.MaxSolveTime)
	defer cancel()
	t, err := s.searchTarget(ctx, req)
	if err != nil {
		return err
	}
	opts, err := s.searchOptions(req, t)
	if err != nil {
		return err
	}
	prog := &searchProgress{stream: stream, cancel: cancel}
	opts.Progress = prog.report
	start := time.Now()
	res, err := search.Run(ctx, t.prob, opts)
	if prog.err != nil {
		return prog.err
	}
	if err != nil {
		return err
	}
	if !prog.closed {
		prog.closeSearch(res.Evaluations, opts.Evaluations, res.Search.Best.Mean)
		if prog.err != nil {
			return prog.err
		}
	}
	s.metrics.solverTime("search", start)
	out := &optdv1.SearchResult{Kind: t.kind, Policy: req.GetPolicy(), Objective: t.objective,
		BestPolicy: policy.FormatPlacementSpec(req.GetPolicy(), res.Params), Result: &optdv1.SearchRun{}}
	for _, p := range t.prob.Space() {
		scale := "linear"
		if p.Log {
			scale = "log"
		}
		out.Space = append(out.Space, &optdv1.SearchParam{Name: p.Name, Min: p.Min, Max: p.Max, Default: p.Default, Scale: scale, Integer: p.Integer})
	}
	if err := resultMessage(res, out.Result); err != nil {
		return err
	}
	return stream.Send(&optdv1.SearchResponse{Event: &optdv1.SearchResponse_Result{Result: out}})
}

// searchProgress streams a search's progress: one event per evaluation
// (per simulation in the validation), not per replication. Package search
// reports after each simulation, before the evaluation it completes
// updates the best, so the search phase is closed by one more event with
// the final evaluations and best: at the first validation event, or at
// the end. A failed send cancels the search.
type searchProgress struct {
	stream grpc.ServerStreamingServer[optdv1.SearchResponse]
	cancel context.CancelFunc
	last   *optdv1.SearchProgress
	closed bool
	err    error
}

func (sp *searchProgress) send(p *optdv1.SearchProgress) {
	if sp.err != nil {
		return
	}
	sp.last = p
	if sp.err = sp.stream.Send(&optdv1.SearchResponse{Event: &optdv1.SearchResponse_Progress{Progress: p}}); sp.err != nil {
		sp.cancel()
	}
}

// report is search.Options.Progress.
func (sp *searchProgress) report(st search.Status) {
	if st.Phase == search.PhaseValidation && !sp.closed {
		sp.closeSearch(st.Evaluations, st.Budget, st.Best)
	}
	p := &optdv1.SearchProgress{Phase: st.Phase, Evaluations: int32(st.Evaluations), Budget: int32(st.Budget), Best: finite(st.Best)}
	if st.Phase == search.PhaseValidation {
		p.Simulations, p.SimulationsTotal = int32(st.Simulations), int32(st.SimulationsTotal)
	}
	if l := sp.last; l != nil && p.Phase == l.Phase && p.Evaluations == l.Evaluations && p.Simulations == l.Simulations {
		return
	}
	sp.send(p)
}

// closeSearch sends the search phase's last event.
func (sp *searchProgress) closeSearch(evaluations, budget int, best float64) {
	sp.closed = true
	sp.send(&optdv1.SearchProgress{Phase: search.PhaseSearch, Evaluations: int32(min(evaluations, budget)), Budget: int32(budget), Best: finite(best)})
}

// finite is &x, or nil when x is infinite (no best yet).
func finite(x float64) *float64 {
	if math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// searchOptions checks the request's search settings and bounds the work.
func (s *OptimizeService) searchOptions(req *optdv1.SearchRequest, t *searchTarget) (search.Options, error) {
	o := search.Options{Method: req.GetMethod(), Evaluations: int(req.GetEvaluations()),
		Replications: int(req.GetReplications()), Validation: int(req.GetValidation()), Seed: req.GetSeed()}
	switch {
	case o.Method != "" && o.Method != search.MethodCMAES && o.Method != search.MethodNelderMead:
		return o, invalid("method", o.Method, "want %s or %s", search.MethodCMAES, search.MethodNelderMead)
	case o.Evaluations < 0 || o.Evaluations > maxSearchEvaluations:
		return o, invalid("evaluations", o.Evaluations, "must be in [0, %d] (0: %d)", maxSearchEvaluations, search.DefaultEvaluations)
	case o.Replications < 0 || o.Replications > search.ValidationBase:
		return o, invalid("replications", o.Replications, "must be in [0, %d] (0: the default)", search.ValidationBase)
	case o.Validation < -1 || o.Validation > search.ValidationBase:
		return o, invalid("validation", o.Validation, "must be in [-1, %d] (0: as many as replications; -1: none)", search.ValidationBase)
	case req.GetTimeLimitMs() < 0:
		return o, invalid("time_limit_ms", req.GetTimeLimitMs(), "must be ≥ 0 (0: none)")
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Evaluations == 0 {
		o.Evaluations = search.DefaultEvaluations
	}
	if o.Replications == 0 {
		o.Replications = t.replications
	}
	o.Time = time.Duration(req.GetTimeLimitMs()) * time.Millisecond
	reps := max(o.Replications, o.Validation)
	if n := float64(t.jobs) * float64(reps); n > float64(s.limits.MaxSimulatedJobs) {
		return o, overLimit("jobs × replications", n, "limits.max_simulated_jobs", s.limits.MaxSimulatedJobs)
	}
	return o, nil
}

// searchTarget resolves the scenario and builds the problem of its kind.
func (s *OptimizeService) searchTarget(ctx context.Context, req *optdv1.SearchRequest) (*searchTarget, error) {
	given := 0
	for _, has := range []bool{req.GetPlacementScenario() != nil, req.GetClusterScenario() != nil, req.GetBuiltin() != ""} {
		if has {
			given++
		}
	}
	if given != 1 {
		return nil, invalid("placement_scenario", fmt.Sprintf("%d scenarios given", given), "give exactly one of placement_scenario, cluster_scenario and builtin")
	}
	if req.GetPolicy() == "" {
		return nil, invalid("policy", `""`, "give the placement family or the pipeline spec to tune")
	}
	if req.GetPlacementScenario() != nil {
		return s.placementSearch(ctx, req)
	}
	return s.clusterSearch(req)
}

func (s *OptimizeService) placementSearch(ctx context.Context, req *optdv1.SearchRequest) (*searchTarget, error) {
	text, err := formatJSON(req.GetPlacementScenario())
	if err != nil {
		return nil, invalid("placement_scenario", "<message>", "%v", err)
	}
	sc, err := s.decodeScenario(string(text))
	if err != nil {
		return nil, err
	}
	if o := req.GetObjective(); o != "" && o != objectiveMeanCost {
		return nil, invalid("objective", o, "a placement scenario's objective is %s", objectiveMeanCost)
	}
	sp, err := search.SpaceOf(req.GetPolicy())
	if err != nil {
		return nil, invalid("policy", req.GetPolicy(), "not a placement family with parameters (%s)", strings.Join(search.Families(), ", "))
	}
	if sp, err = sp.Restrict(req.GetParams()); err != nil {
		return nil, invalid("params", req.GetParams(), "%v", err)
	}
	for _, f := range []struct {
		name  string
		value int32
	}{{"window", req.GetWindow()}, {"horizon", req.GetHorizon()}, {"hindsight_classes", req.GetHindsightClasses()}} {
		if f.value < 0 {
			return nil, invalid(f.name, f.value, "must be ≥ 0 (0: the default)")
		}
	}
	refs := req.GetReferences()
	if refs == nil {
		refs = defaultPlacementReferences
	}
	classes := defaultSearchClasses
	if req.HindsightClasses != nil {
		classes = int(req.GetHindsightClasses())
	}
	pp := &search.PlacementProblem{Scenario: sc, Family: req.GetPolicy(), Params: sp, Refs: refs,
		Config: policy.PlacementConfig{Window: int(req.GetWindow()), Horizon: int(req.GetHorizon())},
		Bounds: req.Bounds == nil || req.GetBounds(), HindsightClasses: classes}
	if err := pp.Check(ctx); err != nil {
		if ctx.Err() != nil {
			return nil, err // DEADLINE_EXCEEDED or CANCELLED, not the input's fault
		}
		return nil, invalid("references", strings.Join(refs, ","), "%v", err)
	}
	return &searchTarget{kind: kindPlacement, objective: objectiveMeanCost, prob: pp, replications: sc.Replications, jobs: sc.Jobs}, nil
}

func (s *OptimizeService) clusterSearch(req *optdv1.SearchRequest) (*searchTarget, error) {
	for _, f := range []struct {
		name string
		set  bool
	}{{"bounds", req.Bounds != nil}, {"hindsight_classes", req.HindsightClasses != nil}, {"window", req.GetWindow() != 0}, {"horizon", req.GetHorizon() != 0}} {
		if f.set {
			return nil, invalid(f.name, "<set>", "applies to placement scenarios only; this is a cluster scenario")
		}
	}
	var text string
	if req.GetClusterScenario() != nil {
		data, err := formatJSON(req.GetClusterScenario())
		if err != nil {
			return nil, invalid("cluster_scenario", "<message>", "%v", err)
		}
		text = string(data)
	}
	sc, err := s.decodeClusterScenario("cluster_scenario", text, req.GetBuiltin())
	if err != nil {
		return nil, err
	}
	objective := req.GetObjective()
	if objective == "" {
		objective = search.ClusterObjectives()[0]
	}
	if !slices.Contains(search.ClusterObjectives(), objective) {
		return nil, invalid("objective", objective, "a cluster scenario's objective is %s", strings.Join(search.ClusterObjectives(), " or "))
	}
	prob, err := search.PipelineParams(sc, req.GetPolicy())
	if err != nil {
		return nil, invalid("policy", req.GetPolicy(), "%v", err)
	}
	if prob.Params, err = prob.Params.Restrict(req.GetParams()); err != nil {
		return nil, invalid("params", req.GetParams(), "%v", err)
	}
	prob.Objective, prob.Refs = objective, req.GetReferences()
	if err := prob.Check(); err != nil {
		return nil, invalid("references", strings.Join(prob.Refs, ","), "%v", err)
	}
	return &searchTarget{kind: kindCluster, objective: objective, prob: prob, replications: search.DefaultReplications, jobs: len(sc.Jobs)}, nil
}

package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/policy/placement"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/solver"
	"github.com/optd/optd/thresholds"
)

var _ optdv1.OptimizeServiceServer = (*OptimizeService)(nil)

// defaultSimPolicies are simulated when a request names none.
var defaultSimPolicies = []string{placement.NameRandom, placement.NameGreedy, placement.NameRecedingHorizon}

// OptimizeService serves optd.v1.OptimizeService: stateless adapters to
// packages thresholds, solver and sim. JSON inputs are decoded by the same
// strict decoders as the CLI's files, except that references to files
// ("file" keys: empirical samples, traces) are refused, so that a client
// cannot make the server read its disk.
type OptimizeService struct {
	optdv1.UnimplementedOptimizeServiceServer

	limits  Limits
	metrics *Metrics
}

// NewOptimizeService returns the service; metrics may be nil.
func NewOptimizeService(limits Limits, metrics *Metrics) *OptimizeService {
	return &OptimizeService{limits: limits.withDefaults(), metrics: metrics}
}

// Register adds the service to a gRPC server (for [Options.Register]).
func (s *OptimizeService) Register(r grpc.ServiceRegistrar) {
	optdv1.RegisterOptimizeServiceServer(r, s)
}

// ComputeThresholds implements optd.v1.OptimizeService (Theorems 1-2).
func (s *OptimizeService) ComputeThresholds(ctx context.Context, req *optdv1.ComputeThresholdsRequest) (*optdv1.ComputeThresholdsResponse, error) {
	text, err := inputJSON("workload", req.GetWorkload(), "workload_json", req.GetWorkloadJson())
	if err != nil {
		return nil, err
	}
	w, err := decodeWorkload(text)
	if err != nil {
		return nil, err
	}
	k := int(req.GetJobs())
	if k < 1 {
		return nil, invalid("jobs", k, "must be ≥ 1")
	}
	costs := req.GetSlotCosts()
	for i, c := range costs {
		if !finiteNonNeg(c) {
			return nil, invalid(fieldf("slot_costs[%d]", i), c, "must be finite and ≥ 0 (a fetch cost H(v))")
		}
	}
	if len(costs) > 0 {
		if need := float64(k) * float64(w.MaxReduces()); float64(len(costs)) < need {
			return nil, invalid("slot_costs", fmt.Sprintf("%d costs", len(costs)), "need at least K·max_reduces = %d·%d", k, w.MaxReduces())
		}
	}
	start := time.Now()
	tab, err := thresholds.BuildTable(ctx, w, k, thresholds.Options{})
	s.metrics.solverTime("thresholds", start)
	if err != nil {
		return nil, err
	}
	out := &optdv1.ComputeThresholdsResponse{
		Jobs: int32(tab.Jobs), MaxReduces: int32(tab.MaxReduces), Recursion: tab.Recursion.String(),
		CostCoefficients: tab.CostCoefficients, ElapsedMs: msSince(start),
	}
	for _, q := range tab.Stages {
		out.Stages = append(out.Stages, &optdv1.ThresholdStage{Thresholds: q})
	}
	if len(costs) > 0 {
		c, err := tab.ExpectedCost(costs)
		if err != nil {
			return nil, fmt.Errorf("slot_costs: %w", err)
		}
		out.ExpectedOptimalCost = &c
	}
	return out, nil
}

// SolveInitialAssignment implements optd.v1.OptimizeService (HaSTE's ITA).
// The time limit is min(time_limit_ms, limits.max_solve_time, the call's
// deadline); on it the best solution found and its bound come back with
// optimal = false. work_limit_ms (solver.Options.WorkLimit) stops the exact
// method at a count of work instead, the same answer on any load; the time
// limit stays the hard stop.
func (s *OptimizeService) SolveInitialAssignment(ctx context.Context, req *optdv1.SolveInitialAssignmentRequest) (*optdv1.SolveInitialAssignmentResponse, error) {
	var in *solver.Instance
	text, err := inputJSON("instance", req.GetInstance(), "instance_json", req.GetInstanceJson())
	switch {
	case err != nil:
	case req.GetBuiltin() != "" && text != "":
		return nil, invalid("builtin", req.GetBuiltin(), "give builtin or instance, not both")
	case req.GetBuiltin() != "":
		in, err = solver.BuiltinInstance(req.GetBuiltin())
	case text == "":
		return nil, invalid("instance", "<absent>", "give instance or builtin (%s)", strings.Join(solver.BuiltinNames(), ", "))
	default:
		in, err = solver.DecodeInstance(strings.NewReader(text))
	}
	if err != nil {
		return nil, err
	}
	method := solver.MethodExact
	if req.GetMethod() != "" {
		if method, err = solver.ParseMethod(req.GetMethod()); err != nil {
			return nil, err
		}
	}
	if req.GetTimeLimitMs() < 0 {
		return nil, invalid("time_limit_ms", req.GetTimeLimitMs(), "must be ≥ 0 (0: limits.max_solve_time)")
	}
	if req.GetWorkLimitMs() < 0 || req.GetWorkLimitMs() > maxWorkLimitMS {
		return nil, invalid("work_limit_ms", req.GetWorkLimitMs(), "must be in [0, %d] (0: none)", maxWorkLimitMS)
	}
	if g := req.GetGap(); math.IsNaN(g) || g < 0 || g >= 1 {
		return nil, invalid("gap", g, "the relative tolerance must be in [0, 1)")
	}
	limit := s.limits.MaxSolveTime
	if t := time.Duration(req.GetTimeLimitMs()) * time.Millisecond; t > 0 && t < limit {
		limit = t
	}
	start := time.Now()
	res, err := solver.Solve(ctx, in, method, solver.Options{TimeLimit: limit, Gap: req.GetGap(),
		WorkLimit: time.Duration(req.GetWorkLimitMs()) * time.Millisecond, Seed: req.GetSeed()})
	s.metrics.solverTime("ita-"+string(method), start)
	if err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the result: %w", err)
	}
	typed := &optdv1.ItaResult{}
	if err := resultMessage(res, typed); err != nil {
		return nil, err
	}
	return &optdv1.SolveInitialAssignmentResponse{Objective: res.Objective, Optimal: res.Optimal,
		Result: typed, ResultJson: string(data), ElapsedMs: msSince(start), UpperBound: res.UpperBound, Gap: res.Gap,
		Stopped: string(res.Stats.Stopped)}, nil
}

// Simulate implements optd.v1.OptimizeService: the reduce-placement model of
// docs/formats.md#placement-scenario, every policy on the same replications (common random
// numbers), as `optd bound` simulates them.
func (s *OptimizeService) Simulate(ctx context.Context, req *optdv1.SimulateRequest) (*optdv1.SimulateResponse, error) {
	text, err := inputJSON("scenario", req.GetScenario(), "scenario_json", req.GetScenarioJson())
	if err != nil {
		return nil, err
	}
	sc, names, err := s.scenario(text, req.GetPolicies())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.limits.MaxSolveTime)
	defer cancel()
	factories := make([]sim.NamedFactory, len(names))
	model := sc.PlacementModel() // for the fitted policies (adp-penalty, adp-bid-price)
	for k, name := range names {
		factories[k] = sim.NamedFactory{Name: name, New: func(seed uint64) (policy.Placement, error) {
			return policy.NewPlacement(name, policy.PlacementConfig{Seed: seed, Model: model, Context: ctx})
		}}
	}
	start := time.Now()
	costs := make([][]float64, len(names))
	for rep := range sc.Replications {
		r, err := sc.RunReplication(ctx, rep, factories, false)
		if err != nil {
			return nil, err
		}
		for k, name := range names {
			costs[k] = append(costs[k], r.Results[name].MeanCost)
		}
	}
	s.metrics.solverTime("simulate", start)
	out := &optdv1.SimulateResponse{Replications: int32(sc.Replications), ElapsedMs: msSince(start)}
	for k, name := range names {
		mean, half := sim.MeanCI95(costs[k])
		pc := &optdv1.PolicyCost{Policy: name, MeanCost: mean, ReplicationCosts: costs[k]}
		if !math.IsNaN(half) {
			pc.Ci95 = &half
		}
		out.Policies = append(out.Policies, pc)
	}
	return out, nil
}

// maxMDPStates caps a Bound request's max_states: the MDP's tables grow
// with the states times the decisions per state, and the server must not
// be made to allocate without bound.
const maxMDPStates = 1_000_000

// Bound implements optd.v1.OptimizeService: what `optd bound` prints
// (package bound), with the simulation's progress streamed first and the
// result (docs/formats.md#bound-output) last. Sharding is for batch systems and is not
// offered here.
func (s *OptimizeService) Bound(req *optdv1.BoundRequest, stream grpc.ServerStreamingServer[optdv1.BoundResponse]) error {
	text, err := inputJSON("scenario", req.GetScenario(), "scenario_json", req.GetScenarioJson())
	if err != nil {
		return err
	}
	sc, err := s.decodeScenario(text)
	if err != nil {
		return err
	}
	r := bound.Request{Settings: bound.Settings{
		Policies: req.GetPolicies(), Bounds: req.GetBounds(),
		Bins: int(req.GetBins()), MaxStates: int(req.GetMaxStates()),
		HindsightClasses: int(req.GetHindsightClasses()),
	}}
	if len(r.Policies) == 0 {
		r.Policies = bound.DefaultPolicies
	}
	if len(r.Bounds) == 0 {
		r.Bounds = bound.DefaultBounds
	}
	if r.Bins == 0 {
		r.Bins = bound.DefaultBins
	}
	if r.MaxStates == 0 {
		r.MaxStates = bound.DefaultMaxStates
	}
	if r.MaxStates > maxMDPStates {
		return overLimit("max_states", r.MaxStates, "the server's MDP size limit", maxMDPStates)
	}
	sum := sha256.Sum256([]byte(text))
	r.ScenarioSHA256 = hex.EncodeToString(sum[:])
	ctx, cancel := context.WithTimeout(stream.Context(), s.limits.MaxSolveTime)
	defer cancel()
	var sendErr error
	progress := func(done, total int) {
		if sendErr == nil {
			sendErr = stream.Send(&optdv1.BoundResponse{Event: &optdv1.BoundResponse_Progress{
				Progress: &optdv1.BoundProgress{Done: int32(done), Total: int32(total)}}})
		}
	}
	start := time.Now()
	out, err := bound.Run(ctx, bound.DefaultBackend(), sc, r, bound.Progress{Simulated: progress})
	if err != nil {
		return err
	}
	if sendErr != nil {
		return sendErr
	}
	s.metrics.solverTime("bound", start)
	typed := &optdv1.BoundResult{}
	if err := resultMessage(out, typed); err != nil {
		return err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	if err := stream.Send(&optdv1.BoundResponse{Event: &optdv1.BoundResponse_Result{Result: typed}}); err != nil {
		return err
	}
	return stream.Send(&optdv1.BoundResponse{Event: &optdv1.BoundResponse_ResultJson{ResultJson: string(data)}})
}

// decodeScenario decodes a scenario and checks it against the limits.
func (s *OptimizeService) decodeScenario(data string) (*sim.Scenario, error) {
	if data == "" {
		return nil, invalid("scenario", "<absent>", "give a scenario (docs/formats.md#placement-scenario)")
	}
	if err := rejectFileRefs("scenario_json", []byte(data)); err != nil {
		return nil, err
	}
	sc, err := sim.DecodeScenario([]byte(data), "")
	if err != nil {
		return nil, err
	}
	if n := float64(sc.Jobs) * float64(sc.Replications); n > float64(s.limits.MaxSimulatedJobs) {
		return nil, overLimit("jobs × replications", n, "limits.max_simulated_jobs", s.limits.MaxSimulatedJobs)
	}
	return sc, nil
}

// scenario decodes and bounds a scenario and the policy names to run.
func (s *OptimizeService) scenario(data string, policies []string) (*sim.Scenario, []string, error) {
	sc, err := s.decodeScenario(data)
	if err != nil {
		return nil, nil, err
	}
	if len(policies) == 0 {
		policies = defaultSimPolicies
	}
	known := policy.PlacementNames()
	for i, p := range policies {
		if !slices.Contains(known, p) {
			return nil, nil, invalid(fieldf("policies[%d]", i), p, "unknown policy (known: %s)", strings.Join(known, ", "))
		}
		if slices.Contains(policies[:i], p) {
			return nil, nil, invalid(fieldf("policies[%d]", i), p, "listed twice")
		}
	}
	return sc, policies, nil
}

func decodeWorkload(data string) (*models.Workload, error) {
	if data == "" {
		return nil, invalid("workload", "<absent>", "give a workload (docs/formats.md#workload)")
	}
	if err := rejectFileRefs("workload_json", []byte(data)); err != nil {
		return nil, err
	}
	return models.DecodeWorkload([]byte(data), "")
}

// rejectFileRefs refuses JSON that names a file anywhere (a "file" key at
// any depth): over the network, samples and traces must be inline. Invalid
// JSON passes through, for the strict decoder to report.
func rejectFileRefs(field string, data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	var walk func(path string, v any) error
	walk = func(path string, v any) error {
		switch t := v.(type) {
		case map[string]any:
			for k, x := range t {
				if k == "file" {
					return invalid(path+".file", x, "file references are not accepted over gRPC; give the data inline")
				}
				if err := walk(path+"."+k, x); err != nil {
					return err
				}
			}
		case []any:
			for i, x := range t {
				if err := walk(fmt.Sprintf("%s[%d]", path, i), x); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(field, v)
}

// maxWorkLimitMS is the largest work_limit_ms: a day of work. Beyond it
// the limit means nothing (limits.max_solve_time ends the solve long
// before), and milliseconds as a time.Duration overflow past 2⁶³ ns.
const maxWorkLimitMS = 24 * 60 * 60 * 1000

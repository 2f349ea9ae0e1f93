package server

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"

	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
)

// defaultClusterSeed is `optd simulate --seed`'s default, so that a call
// without a seed answers what the command prints without one.
const defaultClusterSeed = 1

// SimulatePlacement implements optd.v1.OptimizeService: Simulate under the
// name that says which simulator it runs.
func (s *OptimizeService) SimulatePlacement(ctx context.Context, req *optdv1.SimulateRequest) (*optdv1.SimulateResponse, error) {
	return s.Simulate(ctx, req)
}

// clusterOutput is the JSON `optd simulate` prints (its Output type, which
// the server may not import: nothing imports cmd/).
type clusterOutput struct {
	Scenario string `json:"scenario"`
	Policy   string `json:"policy"`
	Seed     uint64 `json:"seed"`
	*sim.ClusterResult
}

// SimulateCluster implements optd.v1.OptimizeService: the cluster
// simulator under a heartbeat policy, bounded by limits.max_solve_time and
// limits.max_simulated_jobs, streaming the jobs finished.
func (s *OptimizeService) SimulateCluster(req *optdv1.SimulateClusterRequest, stream grpc.ServerStreamingServer[optdv1.SimulateClusterResponse]) error {
	sc, err := s.clusterScenario(req)
	if err != nil {
		return err
	}
	seed := req.GetSeed()
	if seed == 0 {
		seed = defaultClusterSeed
	}
	pipe, err := policy.NewPipeline(req.GetPolicy(), policy.HeartbeatConfig{Seed: seed})
	if err != nil {
		return invalid("policy", req.GetPolicy(), "%v", err)
	}
	ctx, cancel := context.WithTimeout(stream.Context(), s.limits.MaxSolveTime)
	defer cancel()
	var sendErr error
	last := -1
	progress := func(done, total int) {
		if sendErr == nil && done != last {
			last = done
			sendErr = stream.Send(&optdv1.SimulateClusterResponse{Event: &optdv1.SimulateClusterResponse_Progress{
				Progress: &optdv1.SimulateClusterProgress{Done: int32(done), Total: int32(total)}}})
		}
	}
	start := time.Now()
	res, err := sim.RunCluster(ctx, sc, pipe, sim.ClusterOptions{Seed: seed, Explain: req.GetExplain(), Progress: progress})
	if err != nil {
		return err
	}
	if sendErr != nil {
		return sendErr
	}
	s.metrics.solverTime("simulate-cluster", start)
	out := clusterOutput{Scenario: sc.Name, Policy: req.GetPolicy(), Seed: seed, ClusterResult: res}
	typed := &optdv1.ClusterSimResult{}
	if err := resultMessage(out, typed); err != nil {
		return err
	}
	data, err := json.Marshal(out)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	if err := stream.Send(&optdv1.SimulateClusterResponse{Event: &optdv1.SimulateClusterResponse_Result{Result: typed}}); err != nil {
		return err
	}
	return stream.Send(&optdv1.SimulateClusterResponse{Event: &optdv1.SimulateClusterResponse_ResultJson{ResultJson: string(data)}})
}

// clusterScenario resolves the request's scenario (typed, JSON text or
// built-in) and bounds it by limits.max_simulated_jobs.
func (s *OptimizeService) clusterScenario(req *optdv1.SimulateClusterRequest) (*sim.ClusterScenario, error) {
	data, err := inputJSON("scenario", req.GetScenario(), "scenario_json", req.GetScenarioJson())
	if err != nil {
		return nil, err
	}
	field := "scenario"
	if req.GetScenarioJson() != "" {
		field = "scenario_json"
	}
	return s.decodeClusterScenario(field, data, req.GetBuiltin())
}

// decodeClusterScenario decodes a cluster scenario's JSON (given as field)
// or resolves a built-in one: exactly one of data and builtin.
func (s *OptimizeService) decodeClusterScenario(field, data, builtin string) (*sim.ClusterScenario, error) {
	var sc *sim.ClusterScenario
	var err error
	switch {
	case (data == "") == (builtin == ""):
		return nil, invalid(field, fmt.Sprintf("%d bytes of scenario (builtin %q)", len(data), builtin), "give exactly one of %s and builtin", field)
	case builtin != "":
		if sc, err = sim.BuiltinCluster(builtin); err != nil {
			return nil, invalid("builtin", builtin, "not a built-in cluster scenario (known: %s)", strings.Join(sim.BuiltinClusterNames(), ", "))
		}
	default:
		if err := rejectFileRefs(field, []byte(data)); err != nil {
			return nil, err
		}
		if sc, err = sim.DecodeClusterScenario(strings.NewReader(data), ""); err != nil {
			return nil, invalid(field, fmt.Sprintf("%d bytes", len(data)), "%v", err)
		}
	}
	if n := len(sc.Jobs); n > s.limits.MaxSimulatedJobs {
		return nil, overLimit("len(scenario.jobs)", n, "limits.max_simulated_jobs", s.limits.MaxSimulatedJobs)
	}
	return sc, nil
}

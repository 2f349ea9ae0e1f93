package server

import (
	"context"
	"fmt"
	"time"

	"github.com/optd/optd/internal/limitdefaults"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Limits bound request and problem sizes, and what the server holds:
// clusters, nodes, slots, jobs and tasks, per cluster and in total. Zero
// fields mean the defaults of [DefaultLimits]. A request over a size limit
// fails with InvalidArgument, one that would make the server hold more
// than a holding limit with ResourceExhausted; both name the limit by its
// config key.
type Limits struct {
	// MaxRequestBytes bounds a request's encoded size (limits.max_request_bytes).
	// Requests up to twice this size are decoded and rejected with
	// InvalidArgument; larger ones are refused by grpc itself with
	// ResourceExhausted before they are read into memory.
	MaxRequestBytes int
	// MaxSlots bounds a cluster's reduce slots (limits.max_slots).
	MaxSlots int
	// MaxNodes bounds a cluster's nodes (limits.max_nodes).
	MaxNodes int
	// MaxClusters bounds the clusters (limits.max_clusters).
	MaxClusters int
	// MaxTotalNodes and MaxTotalSlots bound the nodes and reduce slots
	// of all clusters together (limits.max_total_nodes,
	// limits.max_total_slots).
	MaxTotalNodes, MaxTotalSlots int
	// MaxTotalJobs bounds the unfinished jobs of all clusters together
	// (limits.max_total_jobs).
	MaxTotalJobs int
	// MaxClusterTasks and MaxTotalTasks bound the tasks (all stages) of
	// the active jobs of a heartbeat cluster, and of all clusters together
	// (limits.max_cluster_tasks, limits.max_total_tasks).
	MaxClusterTasks, MaxTotalTasks int
	// MaxJobs bounds a cluster's unfinished jobs (limits.max_jobs); a
	// submission over it fails with ResourceExhausted.
	MaxJobs int
	// MaxTasks bounds the tasks of one job over all its stages on a
	// cluster with a heartbeat policy (limits.max_tasks).
	MaxTasks int
	// MaxSolveTime caps the time limit of SolveInitialAssignment, the run
	// time of Bound, Simulate, SimulateCluster and Search, a PlaceReduces'
	// decision and the build of a registered cluster's placement policy
	// (mdp-optimal's solve, the adp fits) (limits.max_solve_time).
	MaxSolveTime time.Duration
	// MaxSimulatedJobs bounds replications × jobs of Simulate, Bound and
	// Search, and the jobs of SimulateCluster (limits.max_simulated_jobs).
	MaxSimulatedJobs int
	// MaxStartsPerHeartbeat bounds the tasks one Heartbeat starts
	// (limits.max_starts_per_heartbeat), so that a heartbeat's cost and
	// answer stay bounded however many tasks fit the node (tasks without
	// demands all do); the rest start on the next heartbeats.
	MaxStartsPerHeartbeat int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxRequestBytes:       limitdefaults.MaxRequestBytes,
		MaxSlots:              limitdefaults.MaxSlots,
		MaxNodes:              limitdefaults.MaxNodes,
		MaxClusters:           limitdefaults.MaxClusters,
		MaxTotalNodes:         limitdefaults.MaxTotalNodes,
		MaxTotalSlots:         limitdefaults.MaxTotalSlots,
		MaxTotalJobs:          limitdefaults.MaxTotalJobs,
		MaxClusterTasks:       limitdefaults.MaxClusterTasks,
		MaxTotalTasks:         limitdefaults.MaxTotalTasks,
		MaxJobs:               limitdefaults.MaxJobs,
		MaxTasks:              limitdefaults.MaxTasks,
		MaxSolveTime:          limitdefaults.MaxSolveTime,
		MaxSimulatedJobs:      limitdefaults.MaxSimulatedJobs,
		MaxStartsPerHeartbeat: limitdefaults.MaxStartsPerHeartbeat,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxRequestBytes <= 0 {
		l.MaxRequestBytes = d.MaxRequestBytes
	}
	if l.MaxSlots <= 0 {
		l.MaxSlots = d.MaxSlots
	}
	for _, f := range []struct {
		v *int
		d int
	}{{&l.MaxNodes, d.MaxNodes}, {&l.MaxClusters, d.MaxClusters},
		{&l.MaxTotalNodes, d.MaxTotalNodes}, {&l.MaxTotalSlots, d.MaxTotalSlots}, {&l.MaxTotalJobs, d.MaxTotalJobs},
		{&l.MaxClusterTasks, d.MaxClusterTasks}, {&l.MaxTotalTasks, d.MaxTotalTasks}} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
	if l.MaxJobs <= 0 {
		l.MaxJobs = d.MaxJobs
	}
	if l.MaxTasks <= 0 {
		l.MaxTasks = d.MaxTasks
	}
	if l.MaxSolveTime <= 0 {
		l.MaxSolveTime = d.MaxSolveTime
	}
	if l.MaxSimulatedJobs <= 0 {
		l.MaxSimulatedJobs = d.MaxSimulatedJobs
	}
	if l.MaxStartsPerHeartbeat <= 0 {
		l.MaxStartsPerHeartbeat = d.MaxStartsPerHeartbeat
	}
	return l
}

// exhausted is the ResourceExhausted error of a holding limit: what would
// be held, and the limit by its config key.
func exhausted(what string, value any, limit string, max any) error {
	return fmt.Errorf("%w: %s would be %v, over the limit %s = %v", ErrExhausted, what, value, limit, max)
}

// overLimit is the InvalidArgument error of a value over a named limit.
func overLimit(field string, value any, limit string, max any) error {
	return invalid(field, value, "more than %s = %v allows", limit, max)
}

// sizeUnary rejects a request whose encoded size exceeds MaxRequestBytes.
func (s *Server) sizeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
		if err := checkDecoded(m); err != nil {
			return nil, status.Error(codes.InvalidArgument, err.Error())
		}
		if n := proto.Size(m); n > s.limits.MaxRequestBytes {
			return nil, status.Error(codes.InvalidArgument, fmt.Sprintf(
				"request is %d bytes, over the limit limits.max_request_bytes = %d", n, s.limits.MaxRequestBytes))
		}
	}
	return handler(ctx, req)
}

// sizeStream applies the same check to the first (only) request of a
// server-streaming call.
type sizedStream struct {
	grpc.ServerStream
	max int
}

func (ss sizedStream) RecvMsg(m any) error {
	if err := ss.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	if pm, ok := m.(proto.Message); ok {
		if err := checkDecoded(pm); err != nil {
			return status.Error(codes.InvalidArgument, err.Error())
		}
		if n := proto.Size(pm); n > ss.max {
			return status.Error(codes.InvalidArgument, fmt.Sprintf(
				"request is %d bytes, over the limit limits.max_request_bytes = %d", n, ss.max))
		}
	}
	return nil
}

func (s *Server) sizeStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return handler(srv, sizedStream{ServerStream: ss, max: s.limits.MaxRequestBytes})
}

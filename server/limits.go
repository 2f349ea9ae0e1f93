package server

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Limits bound request and problem sizes. Zero fields mean the defaults of
// [DefaultLimits]. A request over a limit fails with InvalidArgument and a
// message naming the limit by its config key.
type Limits struct {
	// MaxRequestBytes bounds a request's encoded size (limits.max_request_bytes).
	// Requests up to twice this size are decoded and rejected with
	// InvalidArgument; larger ones are refused by grpc itself with
	// ResourceExhausted before they are read into memory.
	MaxRequestBytes int
	// MaxSlots bounds a cluster's reduce slots (limits.max_slots); nodes are
	// bounded by the same number.
	MaxSlots int
	// MaxJobs bounds a cluster's unfinished jobs (limits.max_jobs); a
	// submission over it fails with ResourceExhausted.
	MaxJobs int
	// MaxTasks bounds the tasks of one job over all its stages on a
	// cluster with a heartbeat policy (limits.max_tasks).
	MaxTasks int
	// MaxSolveTime caps the time limit of SolveInitialAssignment and the run
	// time of Bound and Simulate (limits.max_solve_time).
	MaxSolveTime time.Duration
	// MaxSimulatedJobs bounds replications × jobs of Simulate and Bound
	// (limits.max_simulated_jobs).
	MaxSimulatedJobs int
}

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxRequestBytes:  4 << 20,
		MaxSlots:         100_000,
		MaxJobs:          100_000,
		MaxTasks:         200_000,
		MaxSolveTime:     time.Minute,
		MaxSimulatedJobs: 10_000_000,
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
	return l
}

// overLimit is the InvalidArgument error of a value over a named limit.
func overLimit(field string, value any, limit string, max any) error {
	return invalid(field, value, "more than %s = %v allows", limit, max)
}

// sizeUnary rejects a request whose encoded size exceeds MaxRequestBytes.
func (s *Server) sizeUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if m, ok := req.(proto.Message); ok {
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

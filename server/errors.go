package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/ledger"
	"github.com/optd/optd/mdp"
	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/solver"
	"github.com/optd/optd/solver/lp"
	"github.com/optd/optd/store"
	"github.com/optd/optd/thresholds"
)

// Error classes of the services. Handlers return plain Go errors wrapping
// one of these (or a package's sentinel); [statusOf] maps them to gRPC codes.
var (
	// ErrInvalid: a request field is invalid (see *FieldError).
	ErrInvalid = errors.New("invalid argument")
	// ErrPrecondition: the request is valid but the state forbids it now
	// (not enough free slots, job already placed).
	ErrPrecondition = errors.New("failed precondition")
	// ErrExhausted: a per-cluster capacity limit is reached.
	ErrExhausted = errors.New("resource exhausted")
	// ErrUnimplemented: the RPC is declared but not served yet.
	ErrUnimplemented = errors.New("unimplemented")
)

// FieldError names a request field, its value and what is wrong with it.
type FieldError struct {
	Field  string
	Value  any
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s = %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) hold.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field string, value any, format string, args ...any) error {
	return &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// invalidSentinels are the packages' input-validation errors.
var invalidSentinels = []error{
	ErrInvalid,
	models.ErrInvalidWorkload, models.ErrInvalidCluster, models.ErrInvalidJob,
	models.ErrInvalidResources, models.ErrInvalidTask,
	solver.ErrInvalidInstance, solver.ErrUnknownInstance, solver.ErrUnknownMethod,
	lp.ErrInvalidInput,
	sim.ErrInvalidScenario, sim.ErrInvalidModel,
	thresholds.ErrJobs, thresholds.ErrWorkload, thresholds.ErrTooLarge,
	thresholds.ErrSlotCosts, thresholds.ErrJob, thresholds.ErrEstimator,
	policy.ErrUnknownPolicy, policy.ErrInvalidConfig, policy.ErrInvalidRequest,
	mdp.ErrInvalidMDP, mdp.ErrTooLarge, mdp.ErrInvalidModel,
	bound.ErrInvalidRequest, ledger.ErrInvalid, store.ErrInvalid,
}

// preconditionSentinels are infeasibility errors: valid input that cannot
// be served in the current state.
var preconditionSentinels = []error{
	ErrPrecondition, lp.ErrInfeasible, thresholds.ErrNoFreeSlots, mdp.ErrInfeasibleTrace,
}

// statusOf is the one place that maps a handler's error to a gRPC status,
// as OpenFGA's pkg/server/errors does: validation → InvalidArgument (the
// message names the field and value), not found → NotFound, duplicate →
// AlreadyExists, infeasible → FailedPrecondition, limits and a store
// read-only for lack of disk space → ResourceExhausted, a failed store →
// Unavailable (restart optd), damaged stored data → DataLoss,
// context → Canceled/DeadlineExceeded, anything else → Internal with a
// generic message, the cause going only to the log. A status error (from
// grpc itself or an interceptor) passes through unchanged.
func statusOf(ctx context.Context, log *slog.Logger, method string, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codeOf(ctx, err)
	if code == codes.Internal {
		log.ErrorContext(ctx, "internal error", "method", method, "err", err)
		return status.Error(codes.Internal, "internal error (the cause is in the server log)")
	}
	return status.Error(code, err.Error())
}

func codeOf(ctx context.Context, err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, lp.ErrTimeLimit) && ctx.Err() != nil:
		return codes.DeadlineExceeded
	case errors.Is(err, store.ErrNotFound), errors.Is(err, ledger.ErrUnknown):
		return codes.NotFound
	case errors.Is(err, store.ErrExists), errors.Is(err, ledger.ErrExists):
		return codes.AlreadyExists
	case errors.Is(err, ErrExhausted), errors.Is(err, store.ErrReadOnly):
		return codes.ResourceExhausted
	case errors.Is(err, store.ErrFailed):
		return codes.Unavailable
	case errors.Is(err, store.ErrCorrupt):
		return codes.DataLoss
	case errors.Is(err, ErrUnimplemented):
		return codes.Unimplemented
	case isAny(err, preconditionSentinels):
		return codes.FailedPrecondition
	case isAny(err, invalidSentinels):
		return codes.InvalidArgument
	}
	return codes.Internal
}

func isAny(err error, targets []error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// mapUnary and mapStream apply statusOf to every handler's error; they are
// the innermost interceptors, so logging and metrics see the final code.
func (s *Server) mapUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		return nil, statusOf(ctx, s.log, info.FullMethod, err)
	}
	return resp, nil
}

func (s *Server) mapStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	return statusOf(ss.Context(), s.log, info.FullMethod, handler(srv, ss))
}

func fieldf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

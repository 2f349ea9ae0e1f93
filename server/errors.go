package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/solver/lp"
)

// Error classes of the services. Handlers return plain Go errors wrapping
// one of these or a package's sentinel; every sentinel of the module carries
// an errkind.Kind, and [statusOf] maps the kind to a gRPC code.
var (
	// ErrInvalid: a request field is invalid (see *FieldError).
	ErrInvalid = errkind.New(errkind.Invalid, "invalid argument")
	// ErrPrecondition: the request is valid but the state forbids it now
	// (not enough free slots, job already placed).
	ErrPrecondition = errkind.New(errkind.Precondition, "failed precondition")
	// ErrExhausted: a per-cluster capacity limit is reached.
	ErrExhausted = errkind.New(errkind.Exhausted, "resource exhausted")
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

// Unwrap makes errors.Is(err, ErrInvalid) hold (and so its kind).
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field string, value any, format string, args ...any) error {
	return &FieldError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// kindCodes maps each kind of error to its gRPC code.
var kindCodes = map[errkind.Kind]codes.Code{
	errkind.Invalid:      codes.InvalidArgument,
	errkind.NotFound:     codes.NotFound,
	errkind.Conflict:     codes.AlreadyExists,
	errkind.Precondition: codes.FailedPrecondition,
	errkind.Exhausted:    codes.ResourceExhausted,
	errkind.Unavailable:  codes.Unavailable,
	errkind.DataLoss:     codes.DataLoss,
}

// statusOf is the one place that maps a handler's error to a gRPC status,
// as OpenFGA's pkg/server/errors does: by the error's kind (validation →
// InvalidArgument, the message naming the field and value; not found →
// NotFound; duplicate → AlreadyExists; infeasible → FailedPrecondition;
// limits and a store read-only for lack of disk space → ResourceExhausted;
// a failed store → Unavailable, restart optd; damaged stored data →
// DataLoss), context → Canceled/DeadlineExceeded, and
// anything else → Internal with a generic message, the cause going only to
// the log. A status error (from grpc itself or an interceptor) passes
// through unchanged.
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
	return status.Error(code, errkind.UserText(err.Error()))
}

func codeOf(ctx context.Context, err error) codes.Code {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, lp.ErrTimeLimit) && ctx.Err() != nil:
		return codes.DeadlineExceeded
	}
	if c, ok := kindCodes[errkind.Of(err)]; ok {
		return c
	}
	return codes.Internal
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

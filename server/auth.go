package server

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// Services that answer without a token: health, so that load balancers
// and orchestrators can probe the server, and reflection, so that grpcurl
// works as the README shows (it describes the API, whose .proto is public
// in the repository; every call of optd's services still needs the token).
var openPrefixes = []string{"/grpc.health.v1.Health/", "/grpc.reflection.v1.ServerReflection/", "/grpc.reflection.v1alpha.ServerReflection/"}

// bearerToken returns the token of an "authorization" value: the scheme
// "Bearer" in any case (RFC 7235: the scheme is case-insensitive), one or
// more spaces, the token.
func bearerToken(v string) (string, bool) {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(v), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimLeft(tok, " "), true
}

// authorize checks the "authorization: Bearer TOKEN" metadata against the
// configured token in constant time; with no token configured every call
// passes. The error says what is missing, never what the token is.
func (s *Server) authorize(ctx context.Context, method string) error {
	if s.opts.Token == "" {
		return nil
	}
	for _, p := range openPrefixes {
		if strings.HasPrefix(method, p) {
			return nil
		}
	}
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get("authorization")
	if len(vals) == 0 {
		return status.Error(codes.Unauthenticated, "missing authorization metadata (want \"Bearer TOKEN\")")
	}
	tok, ok := bearerToken(vals[0])
	if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.Token)) != 1 {
		return status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	return nil
}

func (s *Server) authUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if err := s.authorize(ctx, info.FullMethod); err != nil {
		return nil, err
	}
	return handler(ctx, req)
}

func (s *Server) authStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if err := s.authorize(ss.Context(), info.FullMethod); err != nil {
		return err
	}
	return handler(srv, ss)
}

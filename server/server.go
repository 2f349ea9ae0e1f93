// Package server runs optd's gRPC server: the services the caller registers,
// the standard health service (grpc.health.v1.Health) and server reflection.
//
// Lifecycle of [Server.Run]:
//
//  1. create the data directory (0o750) if missing and bind the listen
//     address (unless [Server.Listen] already did);
//  2. serve, with every service's health status (and the overall status "")
//     NOT_SERVING;
//  3. run the startup self-checks in order; when all pass, set every status
//     SERVING; when one fails, shut down and return its error;
//  4. when ctx is cancelled: set every status NOT_SERVING, GracefulStop
//     (wait for open calls) for at most the shutdown timeout, then Stop
//     (cancel what is left, without waiting for handlers that ignore
//     their cancellation) and return nil: never much later than the
//     shutdown timeout.
//
// Every call is logged at debug level with its method, status code,
// duration_ms, peer and error message, and observed in [Metrics]. Handlers
// return plain Go errors; one function (statusOf) maps them to gRPC codes. The server logs only through the given *slog.Logger and never
// writes to stdout.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/store"
)

// Errors returned by New and Run; match them with errors.Is.
var (
	// ErrOptions wraps an invalid Options field.
	ErrOptions = errkind.New(errkind.Invalid, "server: invalid options")
	// ErrSelfCheck wraps a failed startup self-check (see *SelfCheckError).
	ErrSelfCheck = errkind.New(errkind.Internal, "server: self-check failed")
)

// SelfCheck is one startup check; Run reports SERVING only after every check
// has returned nil. Check should honour ctx, which is cancelled on shutdown.
type SelfCheck struct {
	Name  string
	Check func(ctx context.Context) error
}

// SelfCheckError is the failure of the self-check named Name.
type SelfCheckError struct {
	Name string
	Err  error
}

func (e *SelfCheckError) Error() string {
	return fmt.Sprintf("server: self-check %q: %v", e.Name, e.Err)
}

// Unwrap returns the check's error; errors.Is(err, ErrSelfCheck) also holds.
func (e *SelfCheckError) Unwrap() []error { return []error{ErrSelfCheck, e.Err} }

// Options configures a Server. Zero values are errors unless documented.
type Options struct {
	// Listen is the host:port to bind; "127.0.0.1:0" picks a free port
	// (see Server.Addr).
	Listen string
	// DataDir is created with mode 0o750 if missing.
	DataDir string
	// ShutdownTimeout bounds GracefulStop before Stop; must be > 0.
	ShutdownTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
	// SelfChecks run in order after the server starts accepting calls.
	SelfChecks []SelfCheck
	// Register adds the caller's services; each gets a health status of its
	// own under its full name, as do health and reflection.
	Register []func(grpc.ServiceRegistrar)
	// TLS, if set, serves TLS with this configuration (server certificate,
	// and client certificates when ClientAuth requires them); nil serves
	// plaintext.
	TLS *tls.Config
	// Token, if set, is the bearer token every call but health checks must
	// carry ("authorization: Bearer TOKEN"); others fail Unauthenticated.
	Token string
	// Limits bound request sizes (zero fields: DefaultLimits).
	Limits Limits
	// Metrics, if set, records every call's latency by method and code.
	Metrics *Metrics
	// GatewayListen, if set, is the host:port of the HTTP/JSON gateway
	// (see gateway.go): the same services, TLS and token.
	GatewayListen string
	// Store, if set, drives the health status once the self-checks pass:
	// NOT_SERVING while it refuses changes (read-only for lack of disk
	// space, or failed), SERVING again when it takes them.
	Store *store.Store
}

// Server is a gRPC server with health and reflection. Use New, then Run once.
type Server struct {
	opts   Options
	limits Limits
	log    *slog.Logger
	grpc   *grpc.Server
	health *health.Server
	// services are the names with a health status, "" (overall) first.
	services []string

	// unaryChain and streamChain are the interceptor chains of unary and
	// streaming calls, which the gateway's in-process calls go through
	// too; registered holds the services, for the gateway.
	unaryChain  grpc.UnaryServerInterceptor
	streamChain grpc.StreamServerInterceptor
	registered  *registrar

	mu          sync.Mutex
	lis         net.Listener
	gatewayAddr net.Addr
}

// New validates opts and builds the server; it does not bind or touch the
// disk.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Listen == "":
		return nil, fmt.Errorf("%w: Listen is empty", ErrOptions)
	case opts.DataDir == "":
		return nil, fmt.Errorf("%w: DataDir is empty", ErrOptions)
	case opts.ShutdownTimeout <= 0:
		return nil, fmt.Errorf("%w: ShutdownTimeout %v is not positive", ErrOptions, opts.ShutdownTimeout)
	}
	for i, c := range opts.SelfChecks {
		if c.Name == "" || c.Check == nil {
			return nil, fmt.Errorf("%w: SelfChecks[%d] needs a Name and a Check", ErrOptions, i)
		}
	}
	s := &Server{opts: opts, limits: opts.Limits.withDefaults(), log: opts.Logger, health: health.NewServer()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	// Interceptors, outermost first: logging and metrics see the final
	// status of every call, including authentication and size failures;
	// authentication runs before anything looks at the request; the error
	// mapping is innermost so that handlers return plain Go errors.
	s.unaryChain = unaryChain(s.logUnary, s.authUnary, s.sizeUnary, s.mapUnary)
	s.streamChain = streamChain(s.logStream, s.authStream, s.sizeStream, s.mapStream)
	sopts := []grpc.ServerOption{
		grpc.UnaryInterceptor(s.unaryChain),
		grpc.StreamInterceptor(s.streamChain),
		grpc.MaxRecvMsgSize(2 * s.limits.MaxRequestBytes),
		grpc.ForceServerCodecV2(newRequestCodec()),
	}
	if opts.TLS != nil {
		sopts = append(sopts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(sopts...)
	s.registered = &registrar{services: map[string]registered{}}
	for _, register := range opts.Register {
		register(s.grpc)
		register(s.registered)
	}
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)

	s.services = []string{""}
	for name := range s.grpc.GetServiceInfo() {
		s.services = append(s.services, name)
	}
	slices.Sort(s.services[1:])
	s.setStatus(healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

// Services returns the names that have a health status: "" (the server as a
// whole) and every registered service, sorted.
func (s *Server) Services() []string { return slices.Clone(s.services) }

// setStatus sets every service's status, the overall one ("") last, so that a
// client that sees the overall status change also sees every service's.
func (s *Server) setStatus(st healthpb.HealthCheckResponse_ServingStatus) {
	for _, name := range s.services[1:] {
		s.health.SetServingStatus(name, st)
	}
	s.health.SetServingStatus("", st)
}

// Listen binds the listen address, so that Addr is known before Run; Run
// calls it if the caller did not.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis != nil {
		return fmt.Errorf("server: already listening on %s", s.lis.Addr())
	}
	lis, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("server: listen %q: %w", s.opts.Listen, err)
	}
	s.lis = lis
	return nil
}

// Addr returns the bound address, or nil before Listen.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lis == nil {
		return nil
	}
	return s.lis.Addr()
}

func (s *Server) listener() net.Listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lis
}

// Run serves until ctx is cancelled (then it shuts down gracefully and
// returns nil) or until startup fails (a data directory, listen or self-check
// error, returned after shutting down). Call it once.
func (s *Server) Run(ctx context.Context) error {
	if err := os.MkdirAll(s.opts.DataDir, 0o750); err != nil {
		if lis := s.listener(); lis != nil {
			lis.Close()
		}
		return fmt.Errorf("server: data dir: %w", err)
	}
	if s.listener() == nil {
		if err := s.Listen(); err != nil {
			return err
		}
	}
	lis := s.listener()
	s.log.Info("listening", "addr", lis.Addr().String(), "data_dir", s.opts.DataDir)
	warnExposed(s.log, "listen", lis.Addr(), s.opts.TLS != nil, s.opts.Token != "")

	if s.opts.GatewayListen != "" {
		gctx, cancelGateway := context.WithCancel(ctx)
		defer cancelGateway()
		if err := s.serveGateway(gctx); err != nil {
			lis.Close()
			return err
		}
	}
	served := make(chan error, 1)
	go func() { served <- s.grpc.Serve(lis) }()

	checkCtx, cancelChecks := context.WithCancel(ctx)
	defer cancelChecks()
	checked := make(chan error, 1)
	go func() { checked <- s.selfCheck(checkCtx) }()

	var storeChanged <-chan struct{} // nil until the self-checks pass
	for {
		select {
		case <-ctx.Done():
			s.shutdown()
			return nil
		case err := <-served:
			// Serve returns early only on a listener failure.
			s.shutdown()
			return fmt.Errorf("server: serve: %w", err)
		case err := <-checked:
			checked = nil // a nil channel never fires again
			if err != nil {
				if ctx.Err() != nil {
					s.shutdown()
					return nil // cancelled during the checks: a normal stop
				}
				s.log.Error("self-check failed", "err", err)
				s.shutdown()
				return err
			}
			storeChanged = s.storeChanges()
			s.serving()
		case <-storeChanged:
			storeChanged = s.storeChanges()
			s.serving()
		}
	}
}

// storeChanges returns the channel closed at the next change of the
// store's health (nil without a store). Take it before reading the health,
// so that no change is missed.
func (s *Server) storeChanges() <-chan struct{} {
	if s.opts.Store == nil {
		return nil
	}
	return s.opts.Store.HealthChanged()
}

// serving sets the status once the self-checks passed: SERVING, unless the
// store refuses changes.
func (s *Server) serving() {
	if st := s.opts.Store; st != nil {
		if h := st.Health(); !h.OK() {
			s.setStatus(healthpb.HealthCheckResponse_NOT_SERVING)
			s.log.Warn("not serving: the store refuses changes", "reason", h.Reason)
			return
		}
	}
	s.setStatus(healthpb.HealthCheckResponse_SERVING)
	s.log.Info("serving", "services", s.services[1:])
}

func (s *Server) selfCheck(ctx context.Context) error {
	for _, c := range s.opts.SelfChecks {
		start := time.Now()
		if err := c.Check(ctx); err != nil {
			return &SelfCheckError{Name: c.Name, Err: err}
		}
		s.log.Debug("self-check passed", "check", c.Name, "duration_ms", msSince(start))
	}
	return nil
}

// shutdown marks everything NOT_SERVING, lets open calls finish for at most
// the shutdown timeout, then cancels the rest.
func (s *Server) shutdown() {
	start := time.Now()
	s.health.Shutdown()
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	timer := time.NewTimer(s.opts.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		s.log.Warn("graceful stop timed out; cancelling open calls",
			"shutdown_timeout", s.opts.ShutdownTimeout.String())
		// Stop closes every connection and cancels the calls' contexts but,
		// unlike GracefulStop, does not wait for their handlers: a handler
		// that ignores its context must not hold the shutdown (GracefulStop,
		// still waiting for it, returns on its own in the background).
		s.grpc.Stop()
	}
	s.log.Info("stopped", "duration_ms", msSince(start))
}

func (s *Server) logUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	s.logCall(ctx, info.FullMethod, start, err)
	return resp, err
}

func (s *Server) logStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	s.logCall(ss.Context(), info.FullMethod, start, err)
	return err
}

func (s *Server) logCall(ctx context.Context, method string, start time.Time, err error) {
	code := status.Code(err).String()
	s.opts.Metrics.observeRPC(method, code, time.Since(start))
	if !s.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", method),
		slog.String("code", code),
		slog.Float64("duration_ms", msSince(start)),
	}
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, slog.String("peer", p.Addr.String()))
	}
	if err != nil {
		attrs = append(attrs, slog.String("err", status.Convert(err).Message()))
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "rpc", attrs...)
}

// warnExposed logs a warning when a listener is reachable beyond this
// machine (not a loopback address) without TLS or without a token: anyone
// who can reach it can then read or change every cluster.
func warnExposed(log *slog.Logger, key string, addr net.Addr, tls, token bool) {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || tcp.IP.IsLoopback() || (tls && token) {
		return
	}
	log.Warn("listening beyond loopback without TLS and a bearer token: anyone who can reach it can call it",
		"key", key, "addr", addr.String(), "tls", tls, "token", token)
}

func msSince(start time.Time) float64 {
	return float64(time.Since(start).Microseconds()) / 1e3
}

// DataDirWritable is a self-check that creates, writes and removes a file in
// dir.
func DataDirWritable(dir string) SelfCheck {
	return SelfCheck{Name: "data-dir-writable", Check: func(context.Context) error {
		f, err := os.CreateTemp(dir, ".optd-selfcheck-*")
		if err != nil {
			return err
		}
		name := f.Name()
		_, werr := f.Write([]byte("ok\n"))
		cerr := f.Close()
		rerr := os.Remove(name)
		return errors.Join(werr, cerr, rerr)
	}}
}

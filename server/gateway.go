package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// The HTTP/JSON gateway (grpc-gateway): every unary method of the
// registered services at POST /optd.v1.SERVICE/METHOD with the request as
// its JSON body (protojson: the proto's field names as written or in
// lowerCamelCase; answers as written, see gatewayJSON), and the OpenAPI document at GET /openapi.json. The gateway
// calls the services in process through the same interceptors as a gRPC
// call (authentication by the same bearer token, size limits, error codes,
// logging and metrics), so nothing differs but the encoding; it serves TLS
// with the gRPC server's configuration. Server-streaming methods (Bound,
// SimulateCluster, Search) answer newline-delimited JSON: one
// {"result": MESSAGE} line per message as the handler sends it (flushed),
// and an {"error": STATUS} line if the call fails (with the HTTP status of
// the error's code when it fails before its first message).

// gatewayJSON is the gateway's encoding. Answers use the proto's field
// names (snake_case), the names of the JSON formats and of the command
// line's results, rather than protojson's default lowerCamelCase, so that a
// typed result reads the same over HTTP as from `optd ita --json` or the
// files; requests take either spelling. An unknown request field is refused
// (InvalidArgument, naming it) instead of grpc-gateway's default of
// dropping it, as the command line's strict decoders refuse it: a
// misspelled optional field must not silently fall back to its default.
var gatewayJSON = &runtime.HTTPBodyMarshaler{Marshaler: requestBodyJSON{&runtime.JSONPb{
	MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
	UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
}}}

// requestBodyJSON words protojson's decoding errors for the caller:
// `proto: (line 1:32): unknown field "reduce"` becomes `request body:
// (line 1:32): unknown field "reduce"`, without the library's prefix.
type requestBodyJSON struct{ *runtime.JSONPb }

func (m requestBodyJSON) NewDecoder(r io.Reader) runtime.Decoder {
	d := m.JSONPb.NewDecoder(r)
	return runtime.DecoderFunc(func(v any) error {
		err := d.Decode(v)
		if err == nil || errors.Is(err, io.EOF) { // an empty body is an empty request
			return err
		}
		// protobuf-go separates its prefix by a space or, at random, a
		// non-breaking space (to discourage matching its text).
		msg := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
		return fmt.Errorf("request body: %s", msg)
	})
}

// registrar captures the services Options.Register adds, for the gateway.
type registrar struct {
	services map[string]registered
}

type registered struct {
	desc *grpc.ServiceDesc
	impl any
}

func (r *registrar) RegisterService(desc *grpc.ServiceDesc, impl any) {
	r.services[desc.ServiceName] = registered{desc, impl}
}

// inProcess is a grpc.ClientConnInterface that calls the captured services'
// unary handlers directly, through the server's interceptor chain.
type inProcess struct {
	s        *Server
	services map[string]registered
}

func (c *inProcess) Invoke(ctx context.Context, method string, args, reply any, _ ...grpc.CallOption) error {
	svc, name, ok := splitMethod(method)
	reg, found := c.services[svc]
	if !ok || !found {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	for _, m := range reg.desc.Methods {
		if m.MethodName != name {
			continue
		}
		// The gateway puts the HTTP headers (Authorization among them) in
		// the outgoing metadata; a handler reads the incoming one.
		md, _ := metadata.FromOutgoingContext(ctx)
		ctx = metadata.NewIncomingContext(ctx, md)
		dec := func(v any) error {
			proto.Merge(v.(proto.Message), args.(proto.Message))
			return nil
		}
		resp, err := m.Handler(reg.impl, ctx, dec, c.s.unaryChain)
		if err != nil {
			return err
		}
		proto.Reset(reply.(proto.Message))
		proto.Merge(reply.(proto.Message), resp.(proto.Message))
		return nil
	}
	return status.Errorf(codes.Unimplemented, "unknown method %s", method)
}

// NewStream runs a server-streaming method's handler in process, through
// the server's stream interceptor chain, once the client sent its request.
func (c *inProcess) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	svc, name, ok := splitMethod(method)
	reg, found := c.services[svc]
	if !ok || !found || desc.ClientStreams {
		return nil, status.Errorf(codes.Unimplemented, "unknown server-streaming method %s", method)
	}
	for _, sd := range reg.desc.Streams {
		if sd.StreamName != name {
			continue
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		ctx, cancel := context.WithCancel(metadata.NewIncomingContext(ctx, md))
		return &pipeClient{ctx: ctx, cancel: cancel, out: make(chan proto.Message), run: func(ss grpc.ServerStream) error {
			info := &grpc.StreamServerInfo{FullMethod: method, IsServerStream: true}
			return c.s.streamChain(reg.impl, ss, info, sd.Handler)
		}}, nil
	}
	return nil, status.Errorf(codes.Unimplemented, "unknown method %s", method)
}

// pipeClient is the client end of an in-process server-streaming call:
// SendMsg starts the handler on the request; RecvMsg takes what it sends,
// then its final error (io.EOF when none).
type pipeClient struct {
	ctx    context.Context
	cancel context.CancelFunc
	run    func(grpc.ServerStream) error
	out    chan proto.Message
	// err is the handler's error, set before out is closed.
	err error
}

func (p *pipeClient) Header() (metadata.MD, error) { return metadata.MD{}, nil }
func (p *pipeClient) Trailer() metadata.MD         { return nil }
func (p *pipeClient) CloseSend() error             { return nil }
func (p *pipeClient) Context() context.Context     { return p.ctx }

func (p *pipeClient) SendMsg(m any) error {
	ss := &pipeServer{ctx: p.ctx, req: proto.Clone(m.(proto.Message)), out: p.out}
	go func() {
		defer p.cancel()
		p.err = p.run(ss)
		close(p.out)
	}()
	return nil
}

func (p *pipeClient) RecvMsg(m any) error {
	msg, ok := <-p.out
	if !ok {
		if p.err != nil {
			return p.err
		}
		return io.EOF
	}
	proto.Reset(m.(proto.Message))
	proto.Merge(m.(proto.Message), msg)
	return nil
}

// pipeServer is the handler's end: one request, then messages to the
// client until the call's context ends (the HTTP client went away).
type pipeServer struct {
	ctx  context.Context
	req  proto.Message
	out  chan<- proto.Message
	read bool
}

func (p *pipeServer) SetHeader(metadata.MD) error  { return nil }
func (p *pipeServer) SendHeader(metadata.MD) error { return nil }
func (p *pipeServer) SetTrailer(metadata.MD)       {}
func (p *pipeServer) Context() context.Context     { return p.ctx }

func (p *pipeServer) SendMsg(m any) error {
	select {
	case p.out <- proto.Clone(m.(proto.Message)):
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

func (p *pipeServer) RecvMsg(m any) error {
	if p.read {
		return io.EOF
	}
	p.read = true
	proto.Merge(m.(proto.Message), p.req)
	return nil
}

// splitMethod splits "/pkg.Service/Method".
func splitMethod(m string) (svc, name string, ok bool) {
	if len(m) < 2 || m[0] != '/' {
		return "", "", false
	}
	for i := len(m) - 1; i > 0; i-- {
		if m[i] == '/' {
			return m[1:i], m[i+1:], true
		}
	}
	return "", "", false
}

// streamChain runs stream interceptors in order around a handler, as
// grpc.ChainStreamInterceptor does.
func streamChain(ics ...grpc.StreamServerInterceptor) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		h := handler
		for i := len(ics) - 1; i >= 0; i-- {
			ic, next := ics[i], h
			h = func(srv any, ss grpc.ServerStream) error { return ic(srv, ss, info, next) }
		}
		return h(srv, ss)
	}
}

// unaryChain runs interceptors in order around a handler, as
// grpc.ChainUnaryInterceptor does.
func unaryChain(ics ...grpc.UnaryServerInterceptor) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		h := handler
		for i := len(ics) - 1; i >= 0; i-- {
			ic, next := ics[i], h
			h = func(ctx context.Context, req any) (any, error) { return ic(ctx, req, info, next) }
		}
		return h(ctx, req)
	}
}

// gatewayHandler builds the gateway's HTTP handler over the services the
// server registered.
func (s *Server) gatewayHandler(ctx context.Context) (http.Handler, error) {
	conn := &inProcess{s: s, services: s.registered.services}
	gw := runtime.NewServeMux(runtime.WithMarshalerOption(runtime.MIMEWildcard, gatewayJSON))
	if _, ok := conn.services["optd.v1.ClusterService"]; ok {
		if err := optdv1.RegisterClusterServiceHandlerClient(ctx, gw, optdv1.NewClusterServiceClient(conn)); err != nil {
			return nil, err
		}
	}
	if _, ok := conn.services["optd.v1.OptimizeService"]; ok {
		if err := optdv1.RegisterOptimizeServiceHandlerClient(ctx, gw, optdv1.NewOptimizeServiceClient(conn)); err != nil {
			return nil, err
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(optdv1.OpenAPI)
	})
	mux.Handle("/", gw)
	return mux, nil
}

// serveGateway binds Options.GatewayListen and serves the gateway until
// ctx is cancelled (then it shuts down, at most the shutdown timeout).
func (s *Server) serveGateway(ctx context.Context) error {
	lis, err := net.Listen("tcp", s.opts.GatewayListen)
	if err != nil {
		return fmt.Errorf("server: gateway listen %q: %w", s.opts.GatewayListen, err)
	}
	warnExposed(s.log, "gateway.listen", lis.Addr(), s.opts.TLS != nil, s.opts.Token != "")
	s.mu.Lock()
	s.gatewayAddr = lis.Addr()
	s.mu.Unlock()
	if s.opts.TLS != nil {
		lis = tls.NewListener(lis, s.opts.TLS)
	}
	h, err := s.gatewayHandler(ctx)
	if err != nil {
		lis.Close()
		return err
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("gateway", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
		defer cancel()
		if hs.Shutdown(sctx) != nil {
			hs.Close()
		}
	}()
	s.log.Info("gateway listening", "addr", lis.Addr().String())
	return nil
}

// GatewayAddr returns the gateway's bound address, nil before Run bound it
// or without Options.GatewayListen.
func (s *Server) GatewayAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gatewayAddr
}

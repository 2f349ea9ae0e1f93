package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/optd/optd/internal/testenv"
	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// guard bounds waits that would otherwise hang a broken test; no assertion
// depends on it.
const guard = 30 * time.Second

// syncBuffer is a goroutine-safe log sink whose lines are JSON records.
type syncBuffer struct{ testenv.SyncBuffer }

// records decodes the JSON log lines written so far.
func (b *syncBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		recs = append(recs, m)
	}
	return recs
}

// running is a server started by start, with a client connected to it.
type running struct {
	srv    *Server
	conn   *grpc.ClientConn
	health healthpb.HealthClient
	cancel context.CancelFunc
	done   chan error // Run's result
	logs   *syncBuffer
}

func start(t *testing.T, opts Options) *running {
	t.Helper()
	logs := &syncBuffer{}
	if opts.Listen == "" {
		opts.Listen = "127.0.0.1:0"
	}
	if opts.DataDir == "" {
		opts.DataDir = filepath.Join(t.TempDir(), "data")
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = guard
	}
	opts.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	srv, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, cancel: cancel, done: make(chan error, 1), logs: logs}
	go func() { r.done <- srv.Run(ctx) }()
	conn, err := grpc.NewClient(srv.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("grpc.NewClient: %v", err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		<-r.done
	})
	r.conn = conn
	r.health = healthpb.NewHealthClient(conn)
	return r
}

// stop cancels Run's context and returns Run's result.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	return r.wait(t)
}

func (r *running) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // let Cleanup read it too
		return err
	case <-time.After(guard):
		t.Fatal("Run did not return")
		return nil
	}
}

func (r *running) check(t *testing.T, service string) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	resp, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		t.Fatalf("Health/Check(%q): %v", service, err)
	}
	return resp.GetStatus()
}

// waitServing watches the overall status until it is SERVING; the watch is
// closed before returning so it does not hold up a graceful stop.
func (r *running) waitServing(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w, err := r.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("Health/Watch: %v", err)
	}
	for {
		resp, err := w.Recv()
		if err != nil {
			t.Fatalf("Health/Watch never reported SERVING: %v", err)
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}

func TestServeHealthAndShutdown(t *testing.T) {
	r := start(t, Options{SelfChecks: []SelfCheck{
		{Name: "noop", Check: func(context.Context) error { return nil }},
	}})
	r.waitServing(t)

	services := r.srv.Services()
	for _, want := range []string{"", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !slices.Contains(services, want) {
			t.Errorf("Services() = %q, missing %q", services, want)
		}
	}
	for _, name := range services {
		if got := r.check(t, name); got != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("status of %q = %v, want SERVING", name, got)
		}
	}

	if err := r.stop(t); err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if _, err := r.health.Check(ctx, &healthpb.HealthCheckRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("Check after shutdown: %v, want Unavailable", err)
	}

	// Logs: listening (with the bound address), serving, a debug line per
	// call, stopped.
	var msgs []string
	var sawCheck bool
	for _, rec := range r.logs.records(t) {
		msgs = append(msgs, rec["msg"].(string))
		switch rec["msg"] {
		case "listening":
			if rec["addr"] != r.srv.Addr().String() {
				t.Errorf("listening addr = %v, want %s", rec["addr"], r.srv.Addr())
			}
		case "rpc":
			if rec["level"] != "DEBUG" {
				t.Errorf("rpc log at %v, want DEBUG", rec["level"])
			}
			if _, ok := rec["duration_ms"].(float64); !ok {
				t.Errorf("rpc log without numeric duration_ms: %v", rec)
			}
			if rec["method"] == "/grpc.health.v1.Health/Check" && rec["code"] == "OK" {
				sawCheck = true
			}
		}
	}
	if !sawCheck {
		t.Errorf("no debug log of /grpc.health.v1.Health/Check with code OK in %q", msgs)
	}
	for _, want := range []string{"listening", "serving", "stopped"} {
		if !slices.Contains(msgs, want) {
			t.Errorf("log messages %q lack %q", msgs, want)
		}
	}
}

func TestReflectionListsHealth(t *testing.T) {
	r := start(t, Options{})
	r.waitServing(t)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	stream, err := reflectionpb.NewServerReflectionClient(r.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := &reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: "*"},
	}
	if err := stream.Send(req); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !slices.Contains(names, "grpc.health.v1.Health") {
		t.Fatalf("reflection lists %q, want grpc.health.v1.Health among them", names)
	}
	// The same set has health statuses, so each can be probed by name.
	for _, n := range names {
		if !slices.Contains(r.srv.Services(), n) {
			t.Errorf("reflected service %q has no health status", n)
		}
	}
}

func TestFailingSelfCheck(t *testing.T) {
	release := make(chan error)
	var reached sync.WaitGroup
	reached.Add(1)
	errBroken := errors.New("solver broken")
	r := start(t, Options{SelfChecks: []SelfCheck{
		{Name: "first", Check: func(context.Context) error { return nil }},
		{Name: "solver", Check: func(ctx context.Context) error {
			reached.Done()
			return <-release
		}},
		{Name: "never", Check: func(context.Context) error {
			t.Error("a check after a failed one ran")
			return nil
		}},
	}})
	reached.Wait()
	// While the check runs, the server answers but is not serving.
	for _, name := range r.srv.Services() {
		if got := r.check(t, name); got != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("status of %q during self-check = %v, want NOT_SERVING", name, got)
		}
	}
	release <- errBroken
	err := r.wait(t)
	var sce *SelfCheckError
	if !errors.As(err, &sce) || sce.Name != "solver" {
		t.Fatalf("Run = %v, want *SelfCheckError for %q", err, "solver")
	}
	if !errors.Is(err, ErrSelfCheck) || !errors.Is(err, errBroken) {
		t.Errorf("Run = %v, want it to match ErrSelfCheck and the check's error", err)
	}
	if !strings.Contains(err.Error(), `"solver"`) || !strings.Contains(err.Error(), "solver broken") {
		t.Errorf("message %q should name the check and its error", err)
	}
}

func TestCancelDuringSelfCheck(t *testing.T) {
	reached := make(chan struct{})
	r := start(t, Options{SelfChecks: []SelfCheck{
		{Name: "slow", Check: func(ctx context.Context) error {
			close(reached)
			<-ctx.Done()
			return ctx.Err()
		}},
	}})
	<-reached
	if err := r.stop(t); err != nil {
		t.Fatalf("Run cancelled during a self-check = %v, want nil", err)
	}
}

// An open stream outlives the shutdown timeout: Run must Stop it and return.
// A health watch never ends by itself, so the graceful stop times out
// whatever the timeout; it is a second rather than a millisecond so that the
// watch's handler has time to send NOT_SERVING before Stop cancels the
// stream (at 1 ms a loaded machine did not schedule it in time: a CI run saw
// the stream cancelled with the update unsent).
func TestShutdownTimeoutStopsOpenStreams(t *testing.T) {
	r := start(t, Options{ShutdownTimeout: time.Second})
	r.waitServing(t)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w, err := r.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := w.Recv(); err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch update = %v, %v", resp, err)
	}
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	// The watcher sees NOT_SERVING (health shut down first) and then the end
	// of the stream.
	var last healthpb.HealthCheckResponse_ServingStatus
	for {
		resp, err := w.Recv()
		if err != nil {
			if err == io.EOF {
				t.Errorf("stream ended cleanly; want it cancelled by Stop")
			}
			break
		}
		last = resp.GetStatus()
	}
	if last != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("last status seen = %v, want NOT_SERVING", last)
	}
	var warned bool
	for _, rec := range r.logs.records(t) {
		warned = warned || rec["msg"] == "graceful stop timed out; cancelling open calls"
	}
	if !warned {
		t.Error("no warning that the graceful stop timed out")
	}
}

func TestDataDirCreated(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	r := start(t, Options{DataDir: dir, SelfChecks: []SelfCheck{DataDirWritable(dir)}})
	r.waitServing(t)
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&^0o750 != 0 {
		t.Errorf("data dir mode = %v, want a directory within 0750", fi.Mode())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("self-check left files behind: %v", entries)
	}
}

func TestRunStartupErrors(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("data dir under a file", func(t *testing.T) {
		srv, err := New(Options{Listen: "127.0.0.1:0", DataDir: filepath.Join(file, "sub"), ShutdownTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "data dir") {
			t.Fatalf("Run = %v, want a data dir error", err)
		}
	})
	t.Run("address in use", func(t *testing.T) {
		first, err := New(Options{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ShutdownTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Listen(); err != nil {
			t.Fatal(err)
		}
		defer first.listener().Close()
		if err := first.Listen(); err == nil {
			t.Error("second Listen on the same server succeeded")
		}
		second, err := New(Options{Listen: first.Addr().String(), DataDir: t.TempDir(), ShutdownTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := second.Run(context.Background()); err == nil || !strings.Contains(err.Error(), first.Addr().String()) {
			t.Fatalf("Run on a used address = %v, want a listen error naming it", err)
		}
	})
	t.Run("data dir not writable", func(t *testing.T) {
		err := DataDirWritable(filepath.Join(file, "missing")).Check(context.Background())
		if err == nil {
			t.Fatal("DataDirWritable on a path under a file succeeded")
		}
	})
}

func TestNewValidates(t *testing.T) {
	ok := Options{Listen: "127.0.0.1:0", DataDir: "d", ShutdownTimeout: time.Second}
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no listen", func(o *Options) { o.Listen = "" }, "Listen"},
		{"no data dir", func(o *Options) { o.DataDir = "" }, "DataDir"},
		{"zero timeout", func(o *Options) { o.ShutdownTimeout = 0 }, "ShutdownTimeout"},
		{"unnamed check", func(o *Options) {
			o.SelfChecks = []SelfCheck{{Check: func(context.Context) error { return nil }}}
		}, "SelfChecks[0]"},
		{"nil check", func(o *Options) { o.SelfChecks = []SelfCheck{{Name: "x"}} }, "SelfChecks[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			_, err := New(o)
			if !errors.Is(err, ErrOptions) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want ErrOptions naming %s", err, tt.want)
			}
		})
	}
	if _, err := New(ok); err != nil {
		t.Fatalf("New(valid) = %v", err)
	}
}

// stuckOptimize is an OptimizeService whose ComputeThresholds ignores its
// context until released: a handler that would hold a graceful stop
// forever (the 8-minute heartbeat).
type stuckOptimize struct {
	optdv1.UnimplementedOptimizeServiceServer
	entered chan struct{}
	release chan struct{}
}

func (s *stuckOptimize) ComputeThresholds(context.Context, *optdv1.ComputeThresholdsRequest) (*optdv1.ComputeThresholdsResponse, error) {
	close(s.entered)
	<-s.release
	return &optdv1.ComputeThresholdsResponse{}, nil
}

// TestShutdownNotHeldByAStuckHandler: Run returns (within the test's guard,
// far beyond the 50 ms shutdown timeout) while a handler that ignores its
// cancellation is still running, and the client sees its call end.
func TestShutdownNotHeldByAStuckHandler(t *testing.T) {
	stuck := &stuckOptimize{entered: make(chan struct{}), release: make(chan struct{})}
	defer close(stuck.release)
	r := start(t, Options{ShutdownTimeout: 50 * time.Millisecond,
		Register: []func(grpc.ServiceRegistrar){func(g grpc.ServiceRegistrar) { optdv1.RegisterOptimizeServiceServer(g, stuck) }}})
	r.waitServing(t)
	called := make(chan error, 1)
	go func() {
		_, err := optdv1.NewOptimizeServiceClient(r.conn).ComputeThresholds(context.Background(), &optdv1.ComputeThresholdsRequest{})
		called <- err
	}()
	<-stuck.entered
	if err := r.stop(t); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	select {
	case err := <-called:
		if err == nil {
			t.Error("the stuck call succeeded; want it cut off by the shutdown")
		}
	case <-time.After(guard):
		t.Fatal("the client's call never ended")
	}
}

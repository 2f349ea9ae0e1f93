package server

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// testServer is a running server with both optd services on a loopback
// listener, and a client connection to it.
type testServer struct {
	addr     string
	gateway  string // the gateway's host:port, with Options.GatewayListen
	conn     *grpc.ClientConn
	cluster  optdv1.ClusterServiceClient
	optimize optdv1.OptimizeServiceClient
	store    *store.Store
	stop     func()
}

// startServer serves the store in dir (created per test if "") with opts
// (Listen, DataDir, ShutdownTimeout and Register are filled in) and waits
// until health says SERVING. clientTLS, if set, is the client's TLS config.
func startServer(t testing.TB, dir string, opts Options, clientTLS *tls.Config) *testServer {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	return serveStore(t, st, dir, opts, clientTLS)
}

// serveStore is startServer with an open store (closed when the server
// stops); its health drives the server's.
func serveStore(t testing.TB, st *store.Store, dir string, opts Options, clientTLS *tls.Config) *testServer {
	t.Helper()
	opts.Store = st
	cs, err := NewClusterService(st, opts.Limits, opts.Metrics, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts.Listen, opts.DataDir, opts.ShutdownTimeout = "127.0.0.1:0", dir, 5*time.Second
	opts.Register = []func(grpc.ServiceRegistrar){cs.Register, NewOptimizeService(opts.Limits, opts.Metrics).Register}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()

	creds := insecure.NewCredentials()
	if clientTLS != nil {
		creds = credentials.NewTLS(clientTLS)
	}
	ts := &testServer{addr: srv.Addr().String(), store: st}
	if opts.GatewayListen != "" {
		ts.gateway = waitGateway(t, srv)
	}
	ts.conn, err = grpc.NewClient(ts.addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	ts.cluster = optdv1.NewClusterServiceClient(ts.conn)
	ts.optimize = optdv1.NewOptimizeServiceClient(ts.conn)
	stopped := false
	ts.stop = func() {
		if stopped {
			return
		}
		stopped = true
		ts.conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		st.Close()
	}
	t.Cleanup(ts.stop)
	if clientTLS == nil {
		waitServing(t, ts.conn)
	}
	return ts
}

func waitServing(t testing.TB, conn *grpc.ClientConn) {
	t.Helper()
	hc := healthpb.NewHealthClient(conn)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{})
		if err == nil && r.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("server never reported SERVING")
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// costsCluster is a cluster of one node per cost, one slot each.
func costsCluster(id, policy string, costs ...float64) *optdv1.RegisterClusterRequest {
	req := &optdv1.RegisterClusterRequest{ClusterId: id, Policy: &optdv1.PlacementPolicy{Name: policy}}
	for i, c := range costs {
		n := "n" + strconv.Itoa(i)
		req.Nodes = append(req.Nodes, &optdv1.Node{Id: n, Rack: "r" + strconv.Itoa(i%4)})
		req.Slots = append(req.Slots, &optdv1.ReduceSlot{NodeId: n, FetchCost: c})
	}
	return req
}

func startClient(t *testing.T, addr string, cfg *tls.Config) optdv1.ClusterServiceClient {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return optdv1.NewClusterServiceClient(conn)
}

func (*testServer) discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waitGateway waits until Run has bound the gateway and returns its address.
func waitGateway(t testing.TB, srv *Server) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if a := srv.GatewayAddr(); a != nil {
			return a.String()
		}
	}
	t.Fatal("the gateway never listened")
	return ""
}

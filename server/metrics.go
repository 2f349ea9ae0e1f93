package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/optd/optd/policy"
)

// Metrics are the server's Prometheus metrics, on a registry of their own
// (never the global one). A nil *Metrics records nothing.
type Metrics struct {
	Registry *prometheus.Registry
	// rpc: optd_rpc_duration_seconds{method, code}.
	rpc *prometheus.HistogramVec
	// decisions: optd_placement_decisions_total{policy}.
	decisions *prometheus.CounterVec
	// solver: optd_solver_duration_seconds{solver}.
	solver *prometheus.HistogramVec
	// vetoes: optd_heartbeat_vetoes_total{stage}.
	vetoes *prometheus.CounterVec
	// The store's write-ahead log and checkpoints (see store.Observer).
	walSync, walGroup, checkpoint prometheus.Histogram
}

// NewMetrics registers optd's metrics and the Go and process collectors on
// a fresh registry.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		rpc: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "optd_rpc_duration_seconds",
			Help:    "Latency of gRPC calls by full method and status code.",
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 20), // 50 µs … 26 s
		}, []string{"method", "code"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "optd_placement_decisions_total",
			Help: "Reduce-placement decisions served, by policy.",
		}, []string{"policy"}),
		solver: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "optd_solver_duration_seconds",
			Help:    "Time spent in optimization (placement, thresholds, ita, simulate, bound).",
			Buckets: prometheus.ExponentialBuckets(10e-6, 4, 14), // 10 µs … 11 min
		}, []string{"solver"}),
		vetoes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "optd_heartbeat_vetoes_total",
			Help: "Heartbeat candidates a policy stage refused (a filter's veto, a speculation gate's), by stage.",
		}, []string{"stage"}),
		walSync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "optd_store_wal_sync_seconds",
			Help:    "Time to write and fdatasync one group of changes to the write-ahead log (the floor of a state-changing call's latency).",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16), // 25 µs … 0.8 s
		}),
		walGroup: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "optd_store_wal_group_changes",
			Help:    "Changes per write-ahead log record (group commit size).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 … 1024
		}),
		checkpoint: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "optd_store_checkpoint_seconds",
			Help:    "Time to move the changes logged since the last checkpoint into the database file.",
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 16), // 100 µs … 3.3 s
		}),
	}
	m.Registry.MustRegister(m.rpc, m.decisions, m.solver, m.vetoes, m.walSync, m.walGroup, m.checkpoint,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// LogSynced implements store.Observer.
func (m *Metrics) LogSynced(took time.Duration, changes int) {
	m.walSync.Observe(took.Seconds())
	m.walGroup.Observe(float64(changes))
}

// Checkpointed implements store.Observer.
func (m *Metrics) Checkpointed(took time.Duration, _ int) { m.checkpoint.Observe(took.Seconds()) }

func (m *Metrics) observeRPC(method, code string, d time.Duration) {
	if m != nil {
		m.rpc.WithLabelValues(method, code).Observe(d.Seconds())
	}
}

func (m *Metrics) decision(policy string) {
	if m != nil {
		m.decisions.WithLabelValues(policy).Inc()
	}
}

// vetoed counts a heartbeat's vetoes by stage.
func (m *Metrics) vetoed(vs []policy.Veto) {
	if m != nil {
		for _, v := range vs {
			m.vetoes.WithLabelValues(v.Stage).Inc()
		}
	}
}

func (m *Metrics) solverTime(solver string, start time.Time) {
	if m != nil {
		m.solver.WithLabelValues(solver).Observe(time.Since(start).Seconds())
	}
}

// ServeMetrics serves m at /metrics on addr until ctx is cancelled, then
// shuts the HTTP server down (at most 5 s). It returns once bound, with the
// bound address, or the listen error; serve errors go to log.
func ServeMetrics(ctx context.Context, addr string, m *Metrics, log *slog.Logger) (net.Addr, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry}))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	log.Info("metrics listening", "addr", lis.Addr().String())
	return lis.Addr(), nil
}

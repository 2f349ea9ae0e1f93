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
	}
	m.Registry.MustRegister(m.rpc, m.decisions, m.solver,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

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

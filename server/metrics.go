package server

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/store"
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
	// The store's log syncs (see store.Observer).
	walSync, walGroup prometheus.Histogram
	// store is the store whose condition the storage gauges report (nil:
	// none yet; see watchStore).
	store atomic.Pointer[store.Store]
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
	}
	m.Registry.MustRegister(m.rpc, m.decisions, m.solver, m.vetoes, m.walSync, m.walGroup,
		m.storeGauge("optd_store_read_only", "1 while the store refuses changes for lack of disk space (they resume once space is freed), else 0.",
			func(h store.Health, _ *store.Store) float64 { return boolGauge(h.ReadOnly) }),
		m.storeGauge("optd_store_failed", "1 once a write or sync of the store failed (every call is refused until optd is restarted), else 0.",
			func(h store.Health, _ *store.Store) float64 { return boolGauge(h.Failed) }),
		m.storeGauge("optd_store_free_bytes", "Free space of the data directory's file system at the store's last check (-1: unknown).",
			func(h store.Health, _ *store.Store) float64 { return float64(h.FreeBytes) }),
		m.storeGauge("optd_store_disk_bytes", "Disk space the store's engine uses (tables, logs, manifests).",
			func(_ store.Health, st *store.Store) float64 { return float64(st.DiskBytes()) }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// LogSynced implements store.Observer.
func (m *Metrics) LogSynced(took time.Duration, changes int) {
	m.walSync.Observe(took.Seconds())
	m.walGroup.Observe(float64(changes))
}

// storeGauge is a gauge of the watched store (absent while there is none).
func (m *Metrics) storeGauge(name, help string, value func(store.Health, *store.Store) float64) prometheus.Collector {
	return &storeCollector{m: m, desc: prometheus.NewDesc(name, help, nil, nil), value: value}
}

type storeCollector struct {
	m     *Metrics
	desc  *prometheus.Desc
	value func(store.Health, *store.Store) float64
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	if st := c.m.store.Load(); st != nil {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, c.value(st.Health(), st))
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// watchStore makes st the store of the storage gauges and the observer of
// its log syncs.
func (m *Metrics) watchStore(st *store.Store) {
	if m != nil {
		m.store.Store(st)
		st.Observe(m)
	}
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
// bound address, or the listen error; serve errors go to log. With tlsCfg
// and token (the gRPC server's, when configured) it serves HTTPS and
// requires "Authorization: Bearer TOKEN" (scheme in any case), as the gRPC
// API does.
func ServeMetrics(ctx context.Context, addr string, m *Metrics, log *slog.Logger, tlsCfg *tls.Config, token string) (net.Addr, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	warnExposed(log, "metrics.listen", lis.Addr(), tlsCfg != nil, token != "")
	if tlsCfg != nil {
		lis = tls.NewListener(lis, tlsCfg)
	}
	mux := http.NewServeMux()
	var h http.Handler = promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
	if token != "" {
		h = bearerHTTP(token, h)
	}
	mux.Handle("/metrics", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
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

// bearerHTTP requires the gRPC API's bearer token on an HTTP handler.
func bearerHTTP(token string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(tok), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="optd"`)
			http.Error(w, "missing or invalid bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

package server

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/optd/optd/ledger"
	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

var _ optdv1.ClusterServiceServer = (*ClusterService)(nil)

// ClusterService serves optd.v1.ClusterService over a [store.Store].
//
// Calls on one cluster are serialized by a per-cluster lock (waiting for it
// honours the call's deadline); calls on different clusters run
// concurrently. Each state change is validated against the in-memory state
// and applied to it under the lock, queued to the store's group commit, and
// acknowledged only once the store has it on disk (its write-ahead log
// record synced); the lock is not held during the sync, so the calls that
// arrive meanwhile share the next one. If a commit fails, the store aborts every later change of the same
// cluster generation and the cluster is reloaded from the store on its next
// call (the next generation): no acknowledged change is ever lost, and no
// call is answered from a state that depends on a lost change.
type ClusterService struct {
	optdv1.UnimplementedClusterServiceServer

	store   *store.Store
	limits  Limits
	metrics *Metrics
	log     *slog.Logger

	mu       sync.Mutex
	clusters map[string]*clusterEntry
}

// clusterEntry is a known cluster: lock is a 1-slot semaphore (held while a
// call works on the cluster); c is nil until loaded. gen counts the loads
// (the store's abort-after-failure unit); broken is set when a queued
// change failed, so that the next call reloads.
type clusterEntry struct {
	lock   chan struct{}
	c      *cluster
	gen    uint64
	broken atomic.Bool
}

// NewClusterService serves the clusters in st. metrics and log may be nil.
func NewClusterService(st *store.Store, limits Limits, metrics *Metrics, log *slog.Logger) (*ClusterService, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ids, err := st.List()
	if err != nil {
		return nil, fmt.Errorf("server: listing clusters: %w", err)
	}
	s := &ClusterService{store: st, limits: limits.withDefaults(), metrics: metrics, log: log,
		clusters: make(map[string]*clusterEntry, len(ids))}
	metrics.watchStore(st)
	for _, id := range ids {
		s.clusters[id] = &clusterEntry{lock: make(chan struct{}, 1)}
	}
	return s, nil
}

// Register adds the service to a gRPC server (for [Options.Register]).
func (s *ClusterService) Register(r grpc.ServiceRegistrar) { optdv1.RegisterClusterServiceServer(r, s) }

// acquire locks the cluster and loads it if needed; call release when done.
func (s *ClusterService) acquire(ctx context.Context, id string) (e *clusterEntry, release func(), err error) {
	s.mu.Lock()
	e, ok := s.clusters[id]
	s.mu.Unlock()
	if !ok {
		return nil, nil, fmt.Errorf("%w: cluster %q", store.ErrNotFound, id)
	}
	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	release = func() { <-e.lock }
	if e.c == nil || e.broken.Load() {
		e.c = nil
		e.broken.Store(false)
		e.gen++
		st, err := s.store.Load(ctx, id)
		if err == nil {
			e.c, err = loadCluster(st, s.limits)
		}
		if err != nil {
			release()
			return nil, nil, err
		}
	}
	return e, release, nil
}

// change runs fn on cluster id under its lock. fn validates the call,
// applies its change to the in-memory cluster and returns the response and
// the change for the store (nil: a read; noChange: an answer that neither
// changed nor reveals anything). change then queues the store change (a
// read queues a barrier, so that it never returns state that is not yet
// durable), releases the lock, waits until the store has it on disk and
// only then returns the response.
//
// The cache's one invalidation rule: fn returns an error with a nil change
// when it failed before changing anything (validation), and with a non-nil
// change (dirty, or the change it was building) when it failed after it
// began changing the in-memory cluster; the cluster is then dropped and
// the next call reloads its durable state. A failed commit drops it too
// (broken, see acquire).
func change[T any](ctx context.Context, s *ClusterService, id string, fn func(e *clusterEntry) (T, *store.Change, error)) (T, error) {
	var zero T
	e, release, err := s.acquire(ctx, id)
	if err != nil {
		return zero, err
	}
	resp, ch, err := fn(e)
	if err != nil {
		if ch != nil {
			e.c = nil
		}
		release()
		return zero, err
	}
	if ch == noChange {
		release()
		return resp, nil
	}
	if ch == nil {
		ch = &store.Change{}
	}
	done := s.store.Enqueue(id, e.gen, *ch)
	release()
	if err := <-done; err != nil {
		e.broken.Store(true)
		return zero, err
	}
	return resp, nil
}

// RegisterCluster implements optd.v1.ClusterService.
func (s *ClusterService) RegisterCluster(ctx context.Context, req *optdv1.RegisterClusterRequest) (*optdv1.RegisterClusterResponse, error) {
	c, err := clusterFromRequest(req, s.limits)
	if err != nil {
		return nil, err
	}
	p, err := newPlacement(c.Policy)
	if err != nil {
		return nil, err
	}
	e := &clusterEntry{lock: make(chan struct{}, 1)}
	e.lock <- struct{}{}
	defer func() { <-e.lock }()
	s.mu.Lock()
	if _, dup := s.clusters[c.ID]; dup {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: cluster %q", store.ErrExists, c.ID)
	}
	s.clusters[c.ID] = e
	s.mu.Unlock()

	st := &store.State{Cluster: c, Estimator: estimatorState(p, 0)}
	if err := s.store.Create(ctx, c, st.Estimator); err != nil {
		s.mu.Lock()
		delete(s.clusters, c.ID)
		s.mu.Unlock()
		return nil, err
	}
	if e.c, err = loadCluster(st, s.limits); err != nil {
		return nil, err
	}
	s.log.InfoContext(ctx, "cluster registered", "cluster_id", c.ID, "nodes", len(c.Nodes), "slots", len(c.Slots), "policy", c.Policy.Name)
	return &optdv1.RegisterClusterResponse{State: stateProto(e.c)}, nil
}

// SubmitJob implements optd.v1.ClusterService.
func (s *ClusterService) SubmitJob(ctx context.Context, req *optdv1.SubmitJobRequest) (*optdv1.SubmitJobResponse, error) {
	if err := checkSubmit(req); err != nil {
		return nil, err
	}
	return change(ctx, s, req.GetClusterId(), func(e *clusterEntry) (*optdv1.SubmitJobResponse, *store.Change, error) {
		c := e.c
		if _, dup := c.jobs[req.GetJobId()]; dup {
			return nil, nil, fmt.Errorf("%w: job %q is already in cluster %q", store.ErrExists, req.GetJobId(), req.GetClusterId())
		}
		if req.GetReduces() < 1 && c.sched == nil {
			return nil, nil, invalid("reduces", req.GetReduces(), "must be ≥ 1")
		}
		if r, n := int(req.GetReduces()), len(c.st.Cluster.Slots); r > n && (n > 0 || c.sched == nil) {
			return nil, nil, invalid("reduces", r, "more than the cluster's %d reduce slots", n)
		}
		if len(c.st.Jobs) >= s.limits.MaxJobs {
			return nil, nil, fmt.Errorf("%w: cluster %q has %d unfinished jobs, the limit limits.max_jobs", ErrExhausted, req.GetClusterId(), len(c.st.Jobs))
		}
		ch := &store.Change{}
		if c.sched != nil {
			spec, err := jobSpec(req, c.st.Cluster.Heartbeat, s.limits)
			if err != nil {
				return nil, nil, err
			}
			ev, err := c.sched.Submit(spec)
			if err != nil {
				return nil, nil, err
			}
			if err := c.logChange(ch, ev); err != nil {
				return nil, ch, err
			}
		}
		meta := c.st.Meta
		meta.LastSeq++
		job := store.Job{ID: req.GetJobId(), Maps: int(req.GetMaps()), Reduces: int(req.GetReduces()),
			JobsInSystem: len(c.st.Jobs), Seq: meta.LastSeq}
		c.st.Meta = meta
		c.putJob(job)
		ch.Put, ch.Meta = []store.Job{job}, &meta
		return &optdv1.SubmitJobResponse{JobsInSystem: int32(job.JobsInSystem)}, ch, nil
	})
}

// PlaceReduces implements optd.v1.ClusterService: the cluster's placement
// policy chooses R of the free slots (cheapest first) for the job; the
// decision, the job's slots and the observations the policy's estimator
// recorded are committed together (the observations only, not the window).
func (s *ClusterService) PlaceReduces(ctx context.Context, req *optdv1.PlaceReducesRequest) (*optdv1.PlaceReducesResponse, error) {
	if err := checkPlace(req); err != nil {
		return nil, err
	}
	return change(ctx, s, req.GetClusterId(), func(e *clusterEntry) (*optdv1.PlaceReducesResponse, *store.Change, error) {
		return s.place(e, req)
	})
}

// place decides a PlaceReduces call on the locked cluster.
func (s *ClusterService) place(e *clusterEntry, req *optdv1.PlaceReducesRequest) (*optdv1.PlaceReducesResponse, *store.Change, error) {
	c := e.c
	i, ok := c.jobs[req.GetJobId()]
	if !ok {
		return nil, nil, fmt.Errorf("%w: job %q in cluster %q (SubmitJob first)", store.ErrNotFound, req.GetJobId(), req.GetClusterId())
	}
	job := c.st.Jobs[i]
	if job.Placed {
		return nil, nil, fmt.Errorf("%w: job %q already holds %d reduce slots", ErrPrecondition, job.ID, len(job.Slots))
	}
	if r := int(req.GetReduces()); r > 0 {
		job.Reduces = r
	}
	free := c.freeSlots()
	if job.Reduces > len(free) {
		return nil, nil, fmt.Errorf("%w: job %q needs %d reduce slots, %d are free (retry after a job finishes)",
			ErrPrecondition, job.ID, job.Reduces, len(free))
	}
	preq := &policy.PlacementRequest{Free: free, X: req.GetDataMb(), R: job.Reduces, JobsInSystem: job.JobsInSystem, Held: c.heldBuf[:0]}
	defer func() { clear(preq.Held); c.heldBuf = preq.Held[:0] }() // policies do not keep Held
	for _, j := range c.st.Jobs {
		switch {
		case j.Placed:
			preq.Held = append(preq.Held, j.Slots)
		case j.ID != job.ID:
			preq.Waiting++
		}
	}
	seen := estimatorSeen(c.policy)
	start := time.Now()
	d, err := c.policy.Place(preq)
	s.metrics.solverTime("placement", start)
	if err != nil {
		return nil, dirty, err // the policy may have observed the job
	}
	if err := checkPositions(d.Positions, job.Reduces, len(free)); err != nil {
		return nil, dirty, err
	}
	observed, err := observedSince(c.policy, seen)
	if err != nil {
		return nil, dirty, err
	}
	job.Placed, job.DataMB = true, req.GetDataMb()
	job.Slots = make([]int, len(d.Positions))
	resp := &optdv1.PlaceReducesResponse{Policy: c.policy.Name(), Reason: d.Reason, Slots: make([]*optdv1.PlacedSlot, len(d.Positions))}
	y := req.GetDataMb() / float64(job.Reduces)
	for k, pos := range d.Positions {
		v := free[pos].Index
		job.Slots[k] = v
		sl := c.st.Cluster.Slots[v]
		resp.Slots[k] = &optdv1.PlacedSlot{Slot: int32(v), NodeId: sl.Node, FetchCost: sl.FetchCost}
		resp.FetchCost += y * sl.FetchCost
	}
	if !math.IsNaN(d.Threshold) {
		resp.Threshold = &d.Threshold
	}
	c.putJob(job)
	s.metrics.decision(resp.Policy)
	return resp, &store.Change{Put: []store.Job{job}, Observed: observed}, nil
}

// checkPositions guards against a policy answering out of contract.
func checkPositions(pos []int, r, nFree int) error {
	if len(pos) != r {
		return fmt.Errorf("server: policy returned %d positions for R = %d", len(pos), r)
	}
	for k, p := range pos {
		if p < 0 || p >= nFree || (k > 0 && p <= pos[k-1]) {
			return fmt.Errorf("server: policy returned positions %v (not ascending in [0, %d))", pos, nFree)
		}
	}
	return nil
}

// JobFinished implements optd.v1.ClusterService.
func (s *ClusterService) JobFinished(ctx context.Context, req *optdv1.JobFinishedRequest) (*optdv1.JobFinishedResponse, error) {
	if err := checkJobRef(req.GetClusterId(), req.GetJobId()); err != nil {
		return nil, err
	}
	return change(ctx, s, req.GetClusterId(), func(e *clusterEntry) (*optdv1.JobFinishedResponse, *store.Change, error) {
		c := e.c
		i, ok := c.jobs[req.GetJobId()]
		if !ok {
			return nil, nil, fmt.Errorf("%w: job %q in cluster %q", store.ErrNotFound, req.GetJobId(), req.GetClusterId())
		}
		ch := &store.Change{}
		if c.sched != nil && c.sched.Ledger.HasJob(req.GetJobId()) {
			// Ended outside optd's view (killed, or its completions not
			// reported): its attempts are gone too.
			if err := c.sched.Ledger.Remove(req.GetJobId()); err != nil {
				return nil, nil, err
			}
			if err := c.logChange(ch, ledger.Event{Remove: req.GetJobId()}); err != nil {
				return nil, ch, err
			}
		}
		freed := len(c.st.Jobs[i].Slots)
		meta := c.st.Meta
		meta.Finished++
		c.st.Meta = meta
		c.deleteJob(req.GetJobId())
		ch.Delete, ch.Meta = []string{req.GetJobId()}, &meta
		return &optdv1.JobFinishedResponse{FreedSlots: int32(freed)}, ch, nil
	})
}

// GetClusterState implements optd.v1.ClusterService.
func (s *ClusterService) GetClusterState(ctx context.Context, req *optdv1.GetClusterStateRequest) (*optdv1.GetClusterStateResponse, error) {
	if err := checkID("cluster_id", req.GetClusterId()); err != nil {
		return nil, err
	}
	return change(ctx, s, req.GetClusterId(), func(e *clusterEntry) (*optdv1.GetClusterStateResponse, *store.Change, error) {
		return &optdv1.GetClusterStateResponse{State: stateProto(e.c)}, nil, nil
	})
}

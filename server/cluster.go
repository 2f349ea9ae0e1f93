package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	// mu guards clusters, total and every entry's usage.
	mu       sync.Mutex
	clusters map[string]*clusterEntry
	total    usage
}

// clusterEntry is a known cluster: lock is a 1-slot semaphore (held while a
// call works on the cluster); c is nil until loaded. gen counts the loads
// (the store's abort-after-failure unit); broken is set when a queued
// change failed, so that the next call reloads. deleted (under lock) tells
// the calls that waited for the lock that DeleteCluster removed it. usage
// (under ClusterService.mu) is what it holds, as last settled.
type clusterEntry struct {
	lock    chan struct{}
	c       *cluster
	gen     uint64
	broken  atomic.Bool
	deleted bool
	usage   usage
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
	// Every cluster is loaded now, so that the limits count what the
	// stored clusters hold from the first call (they hold it in memory
	// from their first call anyway). One that fails to load is counted as
	// a cluster and fails its calls as before.
	for _, id := range ids {
		e := &clusterEntry{lock: make(chan struct{}, 1), usage: usage{clusters: 1}}
		s.clusters[id] = e
		s.total = s.total.plus(e.usage)
		e.lock <- struct{}{}
		if err := s.load(context.Background(), id, e); err != nil {
			log.Warn("cluster not loaded at startup", "cluster_id", id, "err", err)
		}
		<-e.lock
	}
	if len(ids) > 0 {
		log.Info("clusters loaded", "holding", s.total.String())
	}
	return s, nil
}

// load (re)loads entry e's cluster from the store; e's lock is held.
func (s *ClusterService) load(ctx context.Context, id string, e *clusterEntry) error {
	e.c = nil
	e.broken.Store(false)
	e.gen++
	st, err := s.store.Load(ctx, id)
	if err != nil {
		return err
	}
	if e.c, err = loadCluster(st, s.limits); err != nil {
		return err
	}
	s.settle(e, usageOf(e.c))
	return nil
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
//
// A call whose deadline has passed (or that was cancelled) by the time it
// holds the lock changes nothing: its client has given up and may retry.
// fn itself is bounded (every decision's cost is, see Limits), so the lock
// is never held for long past a deadline either.
func change[T any](ctx context.Context, s *ClusterService, id string, fn func(e *clusterEntry) (T, *store.Change, error)) (T, error) {
	var zero T
	e, release, err := s.acquire(ctx, id)
	if err != nil {
		return zero, err
	}
	if err := ctx.Err(); err != nil {
		release()
		return zero, fmt.Errorf("cluster %q: not started: %w", id, err)
	}
	resp, ch, err := fn(e)
	if err != nil && ch != nil {
		e.c = nil
	}
	if e.c != nil {
		s.settle(e, usageOf(e.c))
	}
	if err != nil {
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

// RegisterCluster implements optd.v1.ClusterService. A retry (the same
// request for a cluster that exists) answers its state; a different
// cluster under a taken id is ALREADY_EXISTS. Building the placement
// policy (mdp-optimal's solve, the adp fits) is bounded by the call's
// deadline and limits.max_solve_time, whichever ends first.
func (s *ClusterService) RegisterCluster(ctx context.Context, req *optdv1.RegisterClusterRequest) (*optdv1.RegisterClusterResponse, error) {
	c, p, err := s.buildCluster(ctx, req)
	if err != nil {
		return nil, err
	}
	e := &clusterEntry{lock: make(chan struct{}, 1)}
	e.lock <- struct{}{}
	defer func() { <-e.lock }()
	s.mu.Lock()
	if _, dup := s.clusters[c.ID]; dup {
		s.mu.Unlock()
		return s.registerRetry(ctx, c)
	}
	s.clusters[c.ID] = e
	s.mu.Unlock()
	forget := func() {
		s.settle(e, usage{})
		s.mu.Lock()
		delete(s.clusters, c.ID)
		s.mu.Unlock()
	}
	if err := s.reserve(e, usage{clusters: 1, nodes: len(c.Nodes), slots: len(c.Slots)}); err != nil {
		forget()
		return nil, err
	}
	st := &store.State{Cluster: c, Estimator: estimatorState(p, 0)}
	if err := s.store.Create(ctx, c, st.Estimator); err != nil {
		forget()
		return nil, err
	}
	if e.c, err = loadCluster(st, s.limits); err != nil {
		return nil, err
	}
	s.settle(e, usageOf(e.c))
	s.log.InfoContext(ctx, "cluster registered", "cluster_id", c.ID, "nodes", len(c.Nodes), "slots", len(c.Slots), "policy", c.Policy.Name)
	return &optdv1.RegisterClusterResponse{State: stateProto(e.c)}, nil
}

// buildCluster validates a registration and builds its placement policy
// within limits.max_solve_time (ResourceExhausted naming the limit) and the
// call's deadline.
func (s *ClusterService) buildCluster(ctx context.Context, req *optdv1.RegisterClusterRequest) (store.Cluster, policy.Placement, error) {
	bounded, cancel := context.WithTimeout(ctx, s.limits.MaxSolveTime)
	defer cancel()
	c, p, err := clusterAndPolicy(bounded, req, s.limits)
	err = s.pastSolveTime(ctx, bounded, err, fmt.Sprintf("building policy %q", req.GetPolicy().GetName()),
		"mdp-optimal's time_limit_s or the fit's size is beyond what the server allows; raise the limit or shrink the model or the fit")
	return c, p, err
}

// pastSolveTime is err, or ErrExhausted naming limits.max_solve_time when
// err came from bounded's timeout (what took longer; hint: what to change)
// and not from the caller's own deadline or cancellation (ctx), which stays
// the caller's error. Only bounded's deadline counts: a bounded context
// already cancelled by its CancelFunc (place cancels before it checks) says
// nothing about err.
func (s *ClusterService) pastSolveTime(ctx, bounded context.Context, err error, what, hint string) error {
	if err != nil && ctx.Err() == nil && errors.Is(bounded.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: %s took longer than limits.max_solve_time = %v (%s)", ErrExhausted, what, s.limits.MaxSolveTime, hint)
	}
	return err
}

// registerRetry answers a RegisterCluster whose id is taken: the state if
// the stored cluster is the one requested (a retry), else ALREADY_EXISTS.
func (s *ClusterService) registerRetry(ctx context.Context, c store.Cluster) (*optdv1.RegisterClusterResponse, error) {
	return change(ctx, s, c.ID, func(e *clusterEntry) (*optdv1.RegisterClusterResponse, *store.Change, error) {
		same, err := sameCluster(e.c.st.Cluster, c)
		if err != nil {
			return nil, nil, err
		}
		if !same {
			return nil, nil, fmt.Errorf("%w: cluster %q, registered with other nodes, slots or policies (DeleteCluster it first)", store.ErrExists, c.ID)
		}
		return &optdv1.RegisterClusterResponse{State: stateProto(e.c), Retried: true}, nil, nil
	})
}

// sameCluster compares two clusters as the store keeps them (their JSON
// after a round trip, so that an empty and an absent map compare equal).
func sameCluster(a, b store.Cluster) (bool, error) {
	canon := func(c store.Cluster) ([]byte, error) {
		data, err := json.Marshal(c)
		if err != nil {
			return nil, err
		}
		var back store.Cluster
		if err := json.Unmarshal(data, &back); err != nil {
			return nil, err
		}
		return json.Marshal(back)
	}
	x, err := canon(a)
	if err != nil {
		return false, err
	}
	y, err := canon(b)
	if err != nil {
		return false, err
	}
	return bytes.Equal(x, y), nil
}

// SubmitJob implements optd.v1.ClusterService. A retry (the same request
// while the job is unfinished) answers the first call's N_i.
func (s *ClusterService) SubmitJob(ctx context.Context, req *optdv1.SubmitJobRequest) (*optdv1.SubmitJobResponse, error) {
	if err := checkSubmit(req); err != nil {
		return nil, err
	}
	return change(ctx, s, req.GetClusterId(), func(e *clusterEntry) (*optdv1.SubmitJobResponse, *store.Change, error) {
		c := e.c
		if i, dup := c.jobs[req.GetJobId()]; dup {
			return submitRetry(c, c.st.Jobs[i], req, s.limits)
		}
		if req.GetReduces() < 1 && c.sched == nil {
			return nil, nil, invalid("reduces", req.GetReduces(), "must be ≥ 1")
		}
		if r, n := int(req.GetReduces()), len(c.st.Cluster.Slots); r > n && (n > 0 || c.sched == nil) {
			return nil, nil, invalid("reduces", r, "more than the cluster's %d reduce slots", n)
		}
		ch := &store.Change{}
		delta := usage{jobs: 1}
		var spec ledger.JobSpec
		if c.sched != nil {
			var err error
			if spec, err = jobSpec(req, c.st.Cluster.Heartbeat, s.limits); err != nil {
				return nil, nil, err
			}
			if err := c.sched.Ledger.CheckJob(&spec); err != nil {
				return nil, nil, err
			}
			if err := c.checkFits(spec); err != nil {
				return nil, nil, err
			}
			delta.tasks = spec.Tasks()
		}
		if err := s.reserve(e, delta); err != nil {
			return nil, nil, err
		}
		if c.sched != nil {
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

// submitRetry answers a SubmitJob for an unfinished job: its first answer
// if the request is the one that submitted it, else ALREADY_EXISTS. The
// answer waits for the first call's change to be durable (a nil change).
func submitRetry(c *cluster, job store.Job, req *optdv1.SubmitJobRequest, lim Limits) (*optdv1.SubmitJobResponse, *store.Change, error) {
	same := job.Maps == int(req.GetMaps()) && job.Reduces == int(req.GetReduces())
	if c.sched != nil && same {
		if old, ok := c.sched.Ledger.Job(job.ID); ok { // else it completed: the counts are all there is
			spec, err := jobSpec(req, c.st.Cluster.Heartbeat, lim)
			if err != nil {
				return nil, nil, err
			}
			if req.SubmitS == nil {
				spec.SubmitS = old.SubmitS // the server's clock at the first call
			}
			if spec.Weight == 0 {
				spec.Weight = 1
			}
			same = sameJSON(old, spec)
		}
	}
	if !same {
		return nil, nil, fmt.Errorf("%w: job %q is already in cluster %q with other tasks (a retry must repeat the request)", store.ErrExists, job.ID, req.GetClusterId())
	}
	return &optdv1.SubmitJobResponse{JobsInSystem: int32(job.JobsInSystem), Retried: true}, nil, nil
}

// sameJSON compares two values by their JSON encoding.
func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
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
		return s.place(ctx, e, req)
	})
}

// place decides a PlaceReduces call on the locked cluster. ctx and
// limits.max_solve_time bound the policy's computation (rolling-horizon's
// table), so that no call holds the cluster's lock longer: a call stopped
// while it builds fails with nothing applied (the cluster, whose policy may
// have observed the job, is reloaded from its durable state).
func (s *ClusterService) place(ctx context.Context, e *clusterEntry, req *optdv1.PlaceReducesRequest) (*optdv1.PlaceReducesResponse, *store.Change, error) {
	c := e.c
	i, ok := c.jobs[req.GetJobId()]
	if !ok {
		return nil, nil, fmt.Errorf("%w: job %q in cluster %q (SubmitJob first)", store.ErrNotFound, req.GetJobId(), req.GetClusterId())
	}
	job := c.st.Jobs[i]
	if job.Placed {
		return placeRetry(c, job, req)
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
	bounded, cancel := context.WithTimeout(ctx, s.limits.MaxSolveTime)
	preq.Ctx = bounded
	d, err := c.policy.Place(preq)
	cancel()
	s.metrics.solverTime("placement", start)
	err = s.pastSolveTime(ctx, bounded, err, fmt.Sprintf("placing job %q", job.ID),
		"a rolling-horizon table too large for it; a smaller policy.horizon builds faster")
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

// placeRetry answers a PlaceReduces for a job that holds slots: the slots
// if the request is the one that placed them (a retry), else
// FAILED_PRECONDITION. The answer waits for the first call's change to be
// durable (a nil change).
func placeRetry(c *cluster, job store.Job, req *optdv1.PlaceReducesRequest) (*optdv1.PlaceReducesResponse, *store.Change, error) {
	if req.GetDataMb() != job.DataMB || (req.GetReduces() != 0 && int(req.GetReduces()) != len(job.Slots)) {
		return nil, nil, fmt.Errorf("%w: job %q already holds %d reduce slots, placed for data_mb = %v (this request: data_mb = %v, reduces = %d)",
			ErrPrecondition, job.ID, len(job.Slots), job.DataMB, req.GetDataMb(), req.GetReduces())
	}
	resp := &optdv1.PlaceReducesResponse{Policy: c.policy.Name(), Retried: true,
		Reason: "a retry: the slots the job holds since its placement"}
	y := job.DataMB / float64(len(job.Slots))
	for _, v := range job.Slots {
		sl := c.st.Cluster.Slots[v]
		resp.Slots = append(resp.Slots, &optdv1.PlacedSlot{Slot: int32(v), NodeId: sl.Node, FetchCost: sl.FetchCost})
		resp.FetchCost += y * sl.FetchCost
	}
	return resp, nil, nil
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
			// A retry of an applied call, or a job never submitted: nothing
			// to do; answered once the changes queued before are durable.
			return &optdv1.JobFinishedResponse{}, nil, nil
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
		return &optdv1.JobFinishedResponse{FreedSlots: int32(freed), Found: true}, ch, nil
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

package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/thresholds"
)

// Errors; match with errors.Is.
var (
	// ErrNotFound: no cluster (or job) with that id.
	ErrNotFound = errkind.New(errkind.NotFound, "store: not found")
	// ErrExists: a cluster with that id already exists.
	ErrExists = errkind.New(errkind.Conflict, "store: already exists")
	// ErrInvalid: an id the store cannot hold (empty, or over 65535 bytes).
	ErrInvalid = errkind.New(errkind.Invalid, "store: invalid")
	// ErrLocked: another process holds the data directory.
	ErrLocked = errkind.New(errkind.Internal, "store: the data directory is locked by another process")
	// ErrCorrupt: stored data failed its checks (see *DamageError).
	ErrCorrupt = errkind.New(errkind.DataLoss, "store: damaged data")
	// ErrFormat: the data directory was written by a newer optd.
	ErrFormat = errkind.New(errkind.Internal, "store: unsupported data format")
	// ErrReadOnly: the store refuses changes for lack of disk space; it
	// takes them again once space is freed. A refused change was not
	// written.
	ErrReadOnly = errkind.New(errkind.Exhausted, "store: read-only")
	// ErrFailed: a write or sync of the engine failed; the store refuses
	// everything until optd is restarted. A change that got this error may
	// or may not be durable.
	ErrFailed = errkind.New(errkind.Unavailable, "store: storage failed")
)

// Cluster is a cluster's immutable description.
type Cluster struct {
	ID     string `json:"id"`
	Nodes  []Node `json:"nodes"`
	Slots  []Slot `json:"slots"`
	Policy Policy `json:"policy"`
	// Heartbeat configures the Heartbeat RPC (nil: not served).
	Heartbeat *HeartbeatPolicy `json:"heartbeat,omitempty"`
}

// HeartbeatPolicy is the cluster's heartbeat pipeline and the rules of its
// ledger (see package ledger).
type HeartbeatPolicy struct {
	Spec       string   `json:"spec"`
	Resources  []string `json:"resources,omitempty"`
	SlowStart  float64  `json:"slow_start"`
	ReduceRamp bool     `json:"reduce_ramp,omitempty"`
	Seed       uint64   `json:"seed,omitempty"`
	// TypedSlots: nodes' MapSlots and ReduceSlots are MRv1 typed slots.
	TypedSlots bool `json:"typed_slots,omitempty"`
	// PlaceReduces: the pipeline places reducers by the cluster's placement
	// policy (registered with both a heartbeat and a placement policy).
	PlaceReduces bool `json:"place_reduces,omitempty"`
}

// Node is a cluster node.
type Node struct {
	ID          string             `json:"id"`
	Rack        string             `json:"rack,omitempty"`
	Capacity    map[string]float64 `json:"capacity,omitempty"`
	ReduceSlots int                `json:"reduce_slots,omitempty"`
	MapSlots    int                `json:"map_slots,omitempty"`
}

// Slot is a reduce slot with its fetch cost H(v).
type Slot struct {
	Node      string  `json:"node"`
	FetchCost float64 `json:"fetch_cost"`
}

// Policy is the cluster's placement policy and its configuration.
type Policy struct {
	Name    string `json:"name"`
	Window  int    `json:"window,omitempty"`
	Horizon int    `json:"horizon,omitempty"`
	Seed    uint64 `json:"seed,omitempty"`
	// Params are a parameterized family's parameters by name.
	Params map[string]float64 `json:"params,omitempty"`
	// Model is the queueing model a fitted policy fits on (nil: none).
	Model *PlacementModel `json:"model,omitempty"`
}

// PlacementModel is a cluster's queueing model as registered: the fitted
// placement policies fit on it (with the cluster's slot costs) when the
// cluster is registered and again, deterministically, when it is loaded.
type PlacementModel struct {
	ArrivalRate      float64 `json:"arrival_rate"`
	ServiceRate      float64 `json:"service_rate"`
	MaxJobsInService int     `json:"max_jobs_in_service"`
	// MaxWaiting is the waiting room; −1 means unlimited.
	MaxWaiting int `json:"max_waiting"`
	// Workload is the law of (X, R) in its JSON form (docs/formats.md#workload).
	Workload json.RawMessage `json:"workload"`
	Seed     uint64          `json:"seed,omitempty"`
	// SlotCosts are the model's slot costs when the cluster has no reduce
	// slots of its own (a heartbeat cluster); empty means the cluster's.
	SlotCosts []float64 `json:"slot_costs,omitempty"`
}

// Job is an unfinished job.
type Job struct {
	ID           string `json:"id"`
	Maps         int    `json:"maps"`
	Reduces      int    `json:"reduces"`
	JobsInSystem int    `json:"jobs_in_system"`
	// Seq orders submissions within the cluster (1, 2, …).
	Seq int64 `json:"seq"`
	// Placed is set by PlaceReduces; Slots (indices into Cluster.Slots) are
	// then held until the job finishes.
	Placed bool    `json:"placed,omitempty"`
	Slots  []int   `json:"slots,omitempty"`
	DataMB float64 `json:"data_mb,omitempty"`
}

// Meta holds a cluster's counters.
type Meta struct {
	// LastSeq is the Seq of the last submitted job.
	LastSeq int64 `json:"last_seq"`
	// Finished counts the jobs that finished.
	Finished int64 `json:"finished"`
}

// State is everything stored about a cluster.
type State struct {
	Cluster Cluster
	Meta    Meta
	// Jobs are the unfinished jobs in submission order.
	Jobs []Job
	// Estimator is the placement policy's estimator window, nil if none.
	Estimator *thresholds.EstimatorState
	// Log is the cluster's event log in order (the heartbeat ledger's
	// events; opaque to the store).
	Log [][]byte
	// PolicyState is the cluster's policy state (opaque to the store; nil
	// if never set).
	PolicyState []byte
	// Beats are the server's records of each node's last heartbeat that
	// changed the cluster, by node id (opaque to the store; what a retry
	// of it after a restart must be answered with).
	Beats map[string][]byte
}

// Change is one atomic change to a cluster's state.
//
// Its JSON form is what the write-ahead log of format 3 held (read when
// migrating, see legacy.go).
type Change struct {
	// Put adds or replaces jobs (by ID).
	Put []Job `json:"put,omitempty"`
	// Delete removes jobs by ID (missing ones are ErrNotFound).
	Delete []string `json:"delete,omitempty"`
	// Meta, if set, replaces the counters.
	Meta *Meta `json:"meta,omitempty"`
	// Observed appends observations (oldest first) to the estimator window:
	// each one is counted in Seen and, once the window is full, replaces
	// the oldest. Only these are written, never the whole window. The
	// cluster must have been created with an estimator.
	Observed []thresholds.Observation `json:"observed,omitempty"`
	// TruncateLog empties the event log before Log is appended.
	TruncateLog bool `json:"truncate_log,omitempty"`
	// Log entries are appended to the event log.
	Log [][]byte `json:"log,omitempty"`
	// PolicyState, if not nil, replaces the cluster's policy state (an
	// empty, non-nil slice stores an empty state).
	PolicyState []byte `json:"policy_state,omitempty"`
	// Beats replace the records of these nodes' last heartbeat (see
	// State.Beats), in the same atomic write as the heartbeat's changes.
	Beats map[string][]byte `json:"beats,omitempty"`
}

func (c *Change) empty() bool {
	return len(c.Put) == 0 && len(c.Delete) == 0 && c.Meta == nil && len(c.Observed) == 0 &&
		!c.TruncateLog && len(c.Log) == 0 && c.PolicyState == nil && len(c.Beats) == 0
}

// Store is an open data directory. Safe for concurrent use.
type Store struct {
	dir    string // the data directory
	engine *engine
	group  *committer
	health *healthMonitor
	// recovered says what Open found and did (see Recovery).
	recovered Recovery
	observer  atomic.Pointer[Observer]
	// oneOffGen numbers Commit's one-change generations (from 1<<63 up, out
	// of the range callers of Enqueue use).
	oneOffGen atomic.Uint64
}

// Create stores a new cluster with empty jobs and the given estimator
// (nil: none), durably. ErrExists if the id is taken.
func (s *Store) Create(ctx context.Context, c Cluster, est *thresholds.EstimatorState) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := checkClusterID(c.ID); err != nil {
		return err
	}
	op, err := newCreateOp(c, est)
	if err != nil {
		return err
	}
	return <-s.group.enqueue(&pending{op: opCreate, id: c.ID, gen: s.oneOffGen.Add(1), create: op})
}

// Delete removes cluster id and everything stored about it, durably.
// ErrNotFound if there is no such cluster.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return <-s.group.enqueue(&pending{op: opDelete, id: id, gen: s.oneOffGen.Add(1)})
}

// Load returns the stored state of cluster id (ErrNotFound if none): every
// change acknowledged before the call (and possibly changes queued but not
// yet acknowledged: their callers wait for them). It refuses (ErrFailed)
// once the store has failed, since what the engine holds may then be ahead
// of what is on disk.
func (s *Store) Load(ctx context.Context, id string) (*State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.health.failure(); err != nil {
		return nil, err
	}
	if err := checkClusterID(id); err != nil {
		return nil, fmt.Errorf("%w: cluster %q", ErrNotFound, id)
	}
	st, _, err := loadCluster(s.engine.db, id)
	if err != nil {
		return nil, s.engine.readError(err)
	}
	if st == nil {
		return nil, fmt.Errorf("%w: cluster %q", ErrNotFound, id)
	}
	slices.SortFunc(st.Jobs, func(a, b Job) int { return cmp.Compare(a.Seq, b.Seq) })
	return st, nil
}

// List returns the ids of every stored cluster, sorted.
func (s *Store) List() ([]string, error) {
	if err := s.health.failure(); err != nil {
		return nil, err
	}
	ids, err := listClusters(s.engine.db)
	if err != nil {
		return nil, s.engine.readError(err)
	}
	slices.Sort(ids)
	return ids, nil
}

// Recovered says what Open found and did.
func (s *Store) Recovered() Recovery { return s.recovered }

// DiskBytes returns the disk space the engine uses.
func (s *Store) DiskBytes() uint64 { return s.engine.db.Metrics().DiskSpaceUsage() }

package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/thresholds"
)

// Errors; match with errors.Is.
var (
	// ErrNotFound: no cluster (or job) with that id.
	ErrNotFound = errkind.New(errkind.NotFound, "store: not found")
	// ErrExists: a cluster with that id already exists.
	ErrExists = errkind.New(errkind.Conflict, "store: already exists")
	// ErrLocked: another process holds the database file.
	ErrLocked = errkind.New(errkind.Internal, "store: database is locked by another process")
	// ErrCorrupt: a stored record cannot be decoded.
	ErrCorrupt = errkind.New(errkind.Internal, "store: corrupt record")
	// ErrFormat: the database was written by a newer optd.
	ErrFormat = errkind.New(errkind.Internal, "store: unsupported database format")
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
	// PolicyState is the heartbeat policy's last snapshot (opaque to the
	// store), nil if none was stored.
	PolicyState []byte
}

// Change is one atomic change to a cluster's state.
//
// Its JSON form is what the write-ahead log holds (wal.go).
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
	// PolicyState, if not nil, replaces the heartbeat policy's snapshot.
	PolicyState []byte `json:"policy_state,omitempty"`
}

var (
	bucketClusters = []byte("clusters")
	bucketJobs     = []byte("jobs")
	bucketLog      = []byte("log")
	keyCluster     = []byte("cluster")
	keyMeta        = []byte("meta")
	keyEstimator   = []byte("estimator")
	keyPolicyState = []byte("policy_state")
)

// Store is an open database. Safe for concurrent use.
type Store struct {
	db       *bolt.DB
	wal      *walWriter
	cp       *checkpointer
	group    *committer
	observer atomic.Pointer[Observer]
	// replayed counts the log records Open replayed (after a crash).
	replayed int
	// oneOffGen numbers Commit's one-change generations (from 1<<63 up, out
	// of the range callers of Enqueue use).
	oneOffGen atomic.Uint64
}

// Open opens (creating if needed, mode 0o600) the database at path and its
// write-ahead log (directory path+".wal"), replaying the log's changes into
// the database. It waits at most lockTimeout for the file lock (which also
// guards the log), then returns ErrLocked.
func Open(path string, lockTimeout time.Duration) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: lockTimeout})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := db.Update(initFormat); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: init %s: %w", path, err)
	}
	next, replayed, err := recoverLog(db, walDir(path))
	if err != nil {
		db.Close()
		return nil, err
	}
	wal, err := openWAL(walDir(path), next)
	if err != nil {
		db.Close()
		return nil, err
	}
	s := &Store{db: db, wal: wal, replayed: replayed}
	s.cp = newCheckpointer(db, wal, next-1, &s.observer)
	s.group = newCommitter(newIndex(db), wal, s.cp, &s.observer)
	s.oneOffGen.Store(1 << 63)
	return s, nil
}

// Close closes the database.
// Queued changes are written first, then checkpointed, and the log is
// removed; Enqueue after Close answers ErrClosed. If the last checkpoint
// fails, the log stays and the next Open replays it.
func (s *Store) Close() error {
	s.group.close()
	err := s.cp.close()
	// After a failed checkpoint applied is short of the last record, and
	// the log stays for the next Open.
	return errors.Join(err, s.wal.close(s.cp.applied), s.db.Close())
}

// flush waits until every acknowledged change is in bbolt.
func (s *Store) flush() error {
	return s.cp.flush(s.group.durable.Load())
}

// Replayed returns the number of write-ahead log records Open replayed:
// nonzero only after a crash (a clean Close leaves no log).
func (s *Store) Replayed() int { return s.replayed }

// Path returns the database file.
func (s *Store) Path() string { return s.db.Path() }

// Create stores a new cluster with empty jobs and the given estimator
// (nil: none). ErrExists if the id is taken.
func (s *Store) Create(ctx context.Context, c Cluster, est *thresholds.EstimatorState) error {
	return s.update(ctx, func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketClusters)
		if root.Bucket([]byte(c.ID)) != nil {
			return fmt.Errorf("%w: cluster %q", ErrExists, c.ID)
		}
		b, err := root.CreateBucket([]byte(c.ID))
		if err != nil {
			return err
		}
		if _, err := b.CreateBucket(bucketJobs); err != nil {
			return err
		}
		d, err := b.CreateBucket(bucketDescription)
		if err != nil {
			return err
		}
		if err := putJSON(d, keyCluster, c); err != nil {
			return err
		}
		if err := putJSON(b, keyMeta, Meta{}); err != nil {
			return err
		}
		if est == nil {
			return nil
		}
		eb, err := b.CreateBucket(keyEstimator)
		if err != nil {
			return err
		}
		return putEstimator(eb, est)
	})
}

// update runs fn in one read-write transaction unless ctx is already done;
// fn's writes are discarded if ctx is done before the commit starts. A
// commit that has started completes (bbolt cannot abandon an fsync).
func (s *Store) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(func(tx *bolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return ctx.Err()
	})
}

// Load returns the stored state of cluster id (ErrNotFound if none): every
// change acknowledged before the call, checkpointed first if need be.
func (s *Store) Load(ctx context.Context, id string) (*State, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.flush(); err != nil {
		return nil, err
	}
	var st State
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClusters).Bucket([]byte(id))
		if b == nil {
			return fmt.Errorf("%w: cluster %q", ErrNotFound, id)
		}
		d := b.Bucket(bucketDescription)
		if d == nil {
			return fmt.Errorf("%w: cluster %q: missing %q", ErrCorrupt, id, bucketDescription)
		}
		if err := getJSON(d, keyCluster, &st.Cluster); err != nil {
			return err
		}
		if err := getJSON(b, keyMeta, &st.Meta); err != nil {
			return err
		}
		if eb := b.Bucket(keyEstimator); eb != nil {
			var err error
			if st.Estimator, err = loadEstimator(eb); err != nil {
				return fmt.Errorf("cluster %q: %w", id, err)
			}
		}
		if ps := b.Get(keyPolicyState); ps != nil {
			st.PolicyState = slices.Clone(ps)
		}
		if lb := b.Bucket(bucketLog); lb != nil {
			if err := lb.ForEach(func(_, v []byte) error {
				st.Log = append(st.Log, slices.Clone(v))
				return nil
			}); err != nil {
				return err
			}
		}
		return b.Bucket(bucketJobs).ForEach(func(k, v []byte) error {
			var j Job
			if err := json.Unmarshal(v, &j); err != nil {
				return fmt.Errorf("%w: job %q: %w", ErrCorrupt, k, err)
			}
			st.Jobs = append(st.Jobs, j)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(st.Jobs, func(a, b Job) int { return cmp.Compare(a.Seq, b.Seq) })
	return &st, nil
}

// List returns the ids of every stored cluster, sorted.
func (s *Store) List() ([]string, error) {
	var ids []string
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketClusters).ForEachBucket(func(k []byte) error {
			ids = append(ids, string(k))
			return nil
		})
	})
	return ids, err
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encoding %s: %w", key, err)
	}
	return b.Put(key, data)
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return fmt.Errorf("%w: missing %q", ErrCorrupt, key)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: %q: %w", ErrCorrupt, key, err)
	}
	return nil
}

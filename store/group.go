package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/internal/errkind"
)

// Group commit.
//
// A change is durable when the write-ahead log record holding it has been
// synced (wal.go). One sync per change bounds a cluster's throughput at
// 1/fsync (a cluster's calls are serialized), so the store commits in
// groups, as databases do: every change queued while the previous record
// was being written goes into the next one, in queue order, and each caller
// learns when its own record is on disk.
//
// The caller (the server) applies a change to its in-memory state before
// queueing it and acknowledges it only after it is durable. A later change
// of the same cluster may depend on an earlier one, so once a change of a
// cluster fails, every change queued after it for the same cluster and
// generation is aborted (ErrAborted) without being written: the store never
// holds a change whose predecessor it lost. The caller then reloads the
// cluster from the store and continues with the next generation.
//
// The committer checks each change against its index (index.go) of the
// clusters' jobs rather than against bbolt, which holds the logged changes
// only after the next checkpoint.

// ErrAborted: an earlier change of the same cluster generation failed, so
// this one was not written.
var ErrAborted = errkind.New(errkind.Internal, "store: change aborted after an earlier change of the cluster failed")

// ErrClosed: the store is closed.
var ErrClosed = errkind.New(errkind.Internal, "store: closed")

// maxGroup bounds the changes of one transaction.
const maxGroup = 1024

// pending is a queued change.
type pending struct {
	id  string
	gen uint64
	ch  Change
	// rec is ch as a log entry (JSON walEntry; nil for a barrier), encoded
	// by the caller so that the committer, one goroutine for every
	// cluster, does not; encErr is why it could not be.
	rec    []byte
	encErr error
	done   chan error
}

func (c *Change) empty() bool {
	return len(c.Put) == 0 && len(c.Delete) == 0 && c.Meta == nil && len(c.Observed) == 0 && !c.TruncateLog && len(c.Log) == 0 && c.PolicyState == nil
}

// committer writes the queued changes, in order, a group per log record.
type committer struct {
	index *index
	wal   *walWriter
	cp    *checkpointer

	mu     sync.Mutex
	queue  []*pending
	wake   chan struct{} // 1-buffered: the queue is not empty
	closed bool
	exited chan struct{}

	// transactions and changes count the logged groups and the changes
	// they hold (see Store.Stats).
	transactions, changes atomic.Int64
	// durable is the LSN of the last record synced.
	durable atomic.Uint64

	// observer, if set, is told of every record written (Store.Observe).
	observer *atomic.Pointer[Observer]

	// broken is the log's write failure, after which every change fails
	// (only the committer goroutine touches it; see wal.go).
	broken error

	// failed holds the cluster generations whose changes are aborted (only
	// the committer goroutine touches it; one entry per failure).
	failed map[clusterGen]bool
}

type clusterGen struct {
	id  string
	gen uint64
}

func newCommitter(x *index, wal *walWriter, cp *checkpointer, o *atomic.Pointer[Observer]) *committer {
	c := &committer{index: x, wal: wal, cp: cp, observer: o, wake: make(chan struct{}, 1), exited: make(chan struct{}), failed: map[clusterGen]bool{}}
	go c.run()
	return c
}

// Enqueue queues ch for cluster id at generation gen (a number below
// 1<<63 that the caller bumps each time it reloads the cluster) and returns a channel that
// receives nil once ch is durable, or why it was not written. Changes of
// one caller are written in the order of their Enqueue calls. An empty
// Change is a barrier: it is answered once every change queued before it
// is durable (or has failed), with the first failure of its cluster's
// generation, if any.
func (s *Store) Enqueue(id string, gen uint64, ch Change) <-chan error {
	p := &pending{id: id, gen: gen, ch: ch, done: make(chan error, 1)}
	if !ch.empty() {
		if p.rec, p.encErr = json.Marshal(walEntry{Cluster: id, Change: ch}); p.encErr != nil {
			p.encErr = fmt.Errorf("store: encoding a change of cluster %q: %w", id, p.encErr)
		}
	}
	return s.group.enqueue(p)
}

func (c *committer) enqueue(p *pending) <-chan error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		p.done <- ErrClosed
		return p.done
	}
	c.queue = append(c.queue, p)
	signal(c.wake)
	return p.done
}

// close stops accepting changes, writes those queued and waits for the
// committer to exit.
func (c *committer) close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		close(c.wake)
	}
	c.mu.Unlock()
	<-c.exited
}

func (c *committer) run() {
	defer close(c.exited)
	for range c.wake {
		for {
			c.mu.Lock()
			n := min(len(c.queue), maxGroup)
			group := c.queue[:n:n]
			c.queue = c.queue[n:]
			c.mu.Unlock()
			if n == 0 {
				break
			}
			c.write(group)
		}
	}
	// Closed: nothing can be queued any more; write what was.
	c.mu.Lock()
	rest := c.queue
	c.queue = nil
	c.mu.Unlock()
	for len(rest) > 0 {
		n := min(len(rest), maxGroup)
		c.write(rest[:n])
		rest = rest[n:]
	}
}

// write logs one group in one record and answers every change.
func (c *committer) write(group []*pending) {
	results := make([]error, len(group))
	var records [][]byte
	var logged []int
	for i, p := range group {
		switch {
		case c.broken != nil:
			results[i] = c.broken
		case c.failed[clusterGen{p.id, p.gen}]:
			results[i] = ErrAborted
		case p.ch.empty():
			// A barrier writes nothing; it only checks the cluster.
			results[i] = c.index.check(p.id, p.ch)
		default:
			err := p.encErr
			if err == nil {
				err = c.index.check(p.id, p.ch)
			}
			if err != nil {
				results[i] = err
				c.failed[clusterGen{p.id, p.gen}] = true
				continue
			}
			c.index.apply(p.id, p.ch)
			records, logged = append(records, p.rec), append(logged, i)
		}
	}
	if len(records) > 0 {
		if err := c.log(records); err != nil {
			c.broken = err
			for _, i := range logged {
				results[i] = err
			}
		}
	}
	for i, p := range group {
		p.done <- results[i]
	}
}

// log writes the encoded entries (JSON walEntry values) as one record,
// syncs it and hands it to the checkpointer. The checkpointer decodes the
// record, as recovery does, rather than keep the callers' Change values,
// whose slices the callers own once the change is acknowledged.
func (c *committer) log(records [][]byte) error {
	payload := append([]byte{'['}, bytes.Join(records, []byte{','})...)
	payload = append(payload, ']')
	start := time.Now()
	lsn, err := c.wal.append(payload)
	if err != nil {
		return err
	}
	if o := c.observer.Load(); o != nil {
		(*o).LogSynced(time.Since(start), len(records))
	}
	c.cp.add(loggedGroup{lsn: lsn, payload: payload, changes: len(records)})
	c.durable.Store(lsn)
	c.transactions.Add(1)
	c.changes.Add(int64(len(records)))
	return nil
}

// Observer is told of the store's writes (the server turns them into
// metrics). Its methods run on the store's goroutines: they must be quick.
type Observer interface {
	// LogSynced: a group of changes was written to the log and synced.
	LogSynced(took time.Duration, changes int)
	// Checkpointed: changes logged since the last checkpoint were written
	// to bbolt in one transaction.
	Checkpointed(took time.Duration, changes int)
}

// Observe makes o the store's observer (nil: none).
func (s *Store) Observe(o Observer) {
	if o == nil {
		s.observer.Store(nil)
		return
	}
	s.observer.Store(&o)
}

// Stats counts what the group commit wrote since Open.
type Stats struct {
	// Transactions is the number of groups written (one synced log record
	// each).
	Transactions int64
	// Changes is the number of changes they held (barriers excluded), so
	// Changes/Transactions is the mean group size.
	Changes int64
	// Checkpoints is the number of bbolt transactions that moved logged
	// changes into the database.
	Checkpoints int64
}

// Stats returns the group commit's counters.
func (s *Store) Stats() Stats {
	return Stats{Transactions: s.group.transactions.Load(), Changes: s.group.changes.Load(), Checkpoints: s.cp.checkpoints.Load()}
}

// Commit applies ch to cluster id atomically and durably (waiting for its
// group's fsync): deletes, then puts, then meta, observations and the log. ErrNotFound
// if the cluster or a deleted job does not exist; nothing is written then.
// Each Commit is a generation of its own, so a failed Commit aborts no
// other change.
func (s *Store) Commit(ctx context.Context, id string, ch Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return <-s.Enqueue(id, s.oneOffGen.Add(1), ch)
}

// checkChange checks, without writing, that ch applies to cluster id as
// bbolt holds it.
func checkChange(tx *bolt.Tx, id string, ch Change) error {
	b := tx.Bucket(bucketClusters).Bucket([]byte(id))
	if b == nil {
		return checkFacts(id, nil, ch)
	}
	return checkFacts(id, bucketFacts{b}, ch)
}

// clusterFacts is what a change is checked against: a stored cluster
// (bucketFacts) or the committer's index of one (clusterIndex).
type clusterFacts interface {
	hasJob(id string) bool
	hasEstimator() bool
}

// checkFacts checks that ch applies to cluster id (c nil: no such cluster).
func checkFacts(id string, c clusterFacts, ch Change) error {
	if c == nil {
		return fmt.Errorf("%w: cluster %q", ErrNotFound, id)
	}
	for _, jid := range ch.Delete {
		if !c.hasJob(jid) {
			return fmt.Errorf("%w: job %q in cluster %q", ErrNotFound, jid, id)
		}
	}
	if len(ch.Observed) > 0 && !c.hasEstimator() {
		return fmt.Errorf("%w: estimator of cluster %q (created without one)", ErrNotFound, id)
	}
	return nil
}

type bucketFacts struct{ b *bolt.Bucket }

func (f bucketFacts) hasJob(id string) bool { return f.b.Bucket(bucketJobs).Get([]byte(id)) != nil }
func (f bucketFacts) hasEstimator() bool    { return f.b.Bucket(keyEstimator) != nil }

// writeChange writes a checked change: deletes, then puts, then meta,
// observations, the policy state and the log.
func writeChange(tx *bolt.Tx, id string, ch Change) error {
	b := tx.Bucket(bucketClusters).Bucket([]byte(id))
	jobs := b.Bucket(bucketJobs)
	for _, jid := range ch.Delete {
		if err := jobs.Delete([]byte(jid)); err != nil {
			return err
		}
	}
	for _, j := range ch.Put {
		if err := putJSON(jobs, []byte(j.ID), j); err != nil {
			return err
		}
	}
	if ch.Meta != nil {
		if err := putJSON(b, keyMeta, ch.Meta); err != nil {
			return err
		}
	}
	if len(ch.Observed) > 0 {
		if err := appendObservations(b.Bucket(keyEstimator), ch.Observed); err != nil {
			return err
		}
	}
	if ch.PolicyState != nil {
		if err := b.Put(keyPolicyState, ch.PolicyState); err != nil {
			return err
		}
	}
	return writeLog(b, ch)
}

// writeLog truncates and appends to the cluster's event log, whose keys
// are the bucket's sequence numbers (big-endian, so ForEach reads them in
// order).
func writeLog(b *bolt.Bucket, ch Change) error {
	if ch.TruncateLog && b.Bucket(bucketLog) != nil {
		if err := b.DeleteBucket(bucketLog); err != nil {
			return err
		}
	}
	if len(ch.Log) == 0 {
		return nil
	}
	lb, err := b.CreateBucketIfNotExists(bucketLog)
	if err != nil {
		return err
	}
	for _, e := range ch.Log {
		seq, err := lb.NextSequence()
		if err != nil {
			return err
		}
		if err := lb.Put(binary.BigEndian.AppendUint64(nil, seq), e); err != nil {
			return err
		}
	}
	return nil
}

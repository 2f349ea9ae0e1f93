package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	bolt "go.etcd.io/bbolt"
)

// Group commit.
//
// A change is durable when the bbolt transaction holding it has been
// fsynced. One fsync per change bounds a cluster's throughput at 1/fsync
// (a cluster's calls are serialized), so the store commits in groups, as
// databases do with their write-ahead log: every change queued while the
// previous transaction was being written goes into the next one, in queue
// order, and each caller learns when its own transaction is on disk.
//
// The caller (the server) applies a change to its in-memory state before
// queueing it and acknowledges it only after it is durable. A later change
// of the same cluster may depend on an earlier one, so once a change of a
// cluster fails, every change queued after it for the same cluster and
// generation is aborted (ErrAborted) without being written: the store never
// holds a change whose predecessor it lost. The caller then reloads the
// cluster from the store and continues with the next generation.

// ErrAborted: an earlier change of the same cluster generation failed, so
// this one was not written.
var ErrAborted = errors.New("store: change aborted after an earlier change of the cluster failed")

// ErrClosed: the store is closed.
var ErrClosed = errors.New("store: closed")

// maxGroup bounds the changes of one transaction.
const maxGroup = 1024

// pending is a queued change.
type pending struct {
	id   string
	gen  uint64
	ch   Change
	done chan error
}

func (c *Change) empty() bool {
	return len(c.Put) == 0 && len(c.Delete) == 0 && c.Meta == nil && len(c.Observed) == 0 && !c.TruncateLog && len(c.Log) == 0
}

// committer writes the queued changes, in order, a group per transaction.
type committer struct {
	db *bolt.DB

	mu     sync.Mutex
	queue  []*pending
	wake   chan struct{} // 1-buffered: the queue is not empty
	closed bool
	exited chan struct{}

	// transactions and changes count the committed groups and the changes
	// they wrote (see Store.Stats).
	transactions, changes atomic.Int64

	// failed holds the cluster generations whose changes are aborted (only
	// the committer goroutine touches it; one entry per failure).
	failed map[clusterGen]bool
}

type clusterGen struct {
	id  string
	gen uint64
}

func newCommitter(db *bolt.DB) *committer {
	c := &committer{db: db, wake: make(chan struct{}, 1), exited: make(chan struct{}), failed: map[clusterGen]bool{}}
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
	return s.group.enqueue(&pending{id: id, gen: gen, ch: ch, done: make(chan error, 1)})
}

func (c *committer) enqueue(p *pending) <-chan error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		p.done <- ErrClosed
		return p.done
	}
	c.queue = append(c.queue, p)
	select {
	case c.wake <- struct{}{}:
	default:
	}
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

// errNothingToWrite rolls back a transaction that wrote nothing (no fsync).
var errNothingToWrite = errors.New("nothing to write")

// write commits one group in one transaction and answers every change.
func (c *committer) write(group []*pending) {
	results := make([]error, len(group))
	written := make([]bool, len(group))
	err := c.db.Update(func(tx *bolt.Tx) error {
		any := false
		for i, p := range group {
			if c.failed[clusterGen{p.id, p.gen}] {
				results[i] = ErrAborted
				continue
			}
			if p.ch.empty() {
				// A barrier writes nothing; it only checks the cluster.
				results[i] = checkChange(tx, p.id, p.ch)
				continue
			}
			if err := checkChange(tx, p.id, p.ch); err != nil {
				results[i] = err
				c.failed[clusterGen{p.id, p.gen}] = true
				continue
			}
			if err := writeChange(tx, p.id, p.ch); err != nil {
				return err
			}
			written[i], any = true, true
		}
		if !any {
			return errNothingToWrite
		}
		return nil
	})
	if err == nil {
		c.transactions.Add(1)
		c.changes.Add(int64(countTrue(written)))
	}
	if err != nil && !errors.Is(err, errNothingToWrite) {
		err = fmt.Errorf("store: commit: %w", err)
		for i, p := range group {
			if written[i] {
				results[i] = err
				c.failed[clusterGen{p.id, p.gen}] = true
			}
		}
	}
	for i, p := range group {
		p.done <- results[i]
	}
}

// Stats counts what the group commit wrote since Open.
type Stats struct {
	// Transactions is the number of committed (fsynced) transactions.
	Transactions int64
	// Changes is the number of changes they held (barriers excluded), so
	// Changes/Transactions is the mean group size.
	Changes int64
}

// Stats returns the group commit's counters.
func (s *Store) Stats() Stats {
	return Stats{Transactions: s.group.transactions.Load(), Changes: s.group.changes.Load()}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
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

// checkChange checks, without writing, that ch applies to cluster id.
func checkChange(tx *bolt.Tx, id string, ch Change) error {
	b := tx.Bucket(bucketClusters).Bucket([]byte(id))
	if b == nil {
		return fmt.Errorf("%w: cluster %q", ErrNotFound, id)
	}
	jobs := b.Bucket(bucketJobs)
	for _, jid := range ch.Delete {
		if jobs.Get([]byte(jid)) == nil {
			return fmt.Errorf("%w: job %q in cluster %q", ErrNotFound, jid, id)
		}
	}
	if len(ch.Observed) > 0 && b.Bucket(keyEstimator) == nil {
		return fmt.Errorf("%w: estimator of cluster %q (created without one)", ErrNotFound, id)
	}
	return nil
}

// writeChange writes a checked change: deletes, then puts, then meta,
// observations and the log.
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

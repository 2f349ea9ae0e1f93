package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/optd/optd/internal/errkind"
)

// Group commit.
//
// A change is acknowledged once the engine's write-ahead log holds it
// synced. The caller (the server) applies a change to its in-memory state
// before queueing it and acknowledges it only after it is durable, so the
// store commits in groups, as databases do: one committer goroutine takes
// every change queued while the previous group was being synced, checks each
// against its index of the clusters (index.go), writes the group as one
// engine batch, waits for its sync and answers its callers.
//
// Groups are written one after another, never while the previous one syncs:
// each chunk the engine writes records how far the log was synced before
// it, so a group's first chunk vouches for every group before it. Damage to
// vouched-for bytes is proven damage to acknowledged changes, which Open
// refuses (open.go, chunks.go), while damage after the last vouched-for byte
// is indistinguishable from a write torn by a crash. To leave no
// acknowledged group unvouched for long, the committer writes an empty
// witness record (witnessDelay) after the last group of a burst.
//
// A later change of a cluster may depend on an earlier one, so once a
// change of a cluster fails, every change queued after it for the same
// cluster and generation is aborted (ErrAborted) without being written: the
// store never holds a change whose predecessor it refused. The caller then
// reloads the cluster from the store and continues with the next
// generation.
//
// A failed write or sync fails the store for good (ErrFailed, see
// health.go): the engine's log is then in an unknown state, and after a
// failed fsync the kernel may have dropped the dirty pages and cleared the
// error (PostgreSQL's "fsyncgate"), so nothing is retried; optd must be
// restarted, which recovers from what is on disk.

// ErrAborted: an earlier change of the same cluster generation failed, so
// this one was not written.
var ErrAborted = errkind.New(errkind.Internal, "store: change aborted after an earlier change of the cluster failed")

// ErrClosed: the store is closed.
var ErrClosed = errkind.New(errkind.Internal, "store: closed")

// maxGroup bounds the changes of one batch.
const maxGroup = 1024

// witnessDelay is how long the committer waits after a group, with nothing
// queued, before it writes the witness record that vouches for the group:
// long enough that under a steady load the next group vouches instead (a
// witness is one more sync, which the next group would wait behind), short
// enough that an idle store leaves no acknowledged group unvouched.
const witnessDelay = 5 * time.Millisecond

type opKind uint8

const (
	opChange opKind = iota
	opCreate
	opDelete
)

// createOp is a Create's cluster: its description as stored, and its
// estimator window (nil: none) as the header before its observations and
// their JSON payloads.
type createOp struct {
	desc     []byte
	est      *estimatorHeader
	observed [][]byte
}

// pending is a queued operation.
type pending struct {
	op  opKind
	id  string
	gen uint64
	ch  Change
	// jobs, meta and observed are ch.Put, ch.Meta (stored values) and
	// ch.Observed (JSON payloads, sealed once their ring slot is known),
	// encoded by the caller so that the committer, one goroutine for every
	// cluster, does not; encErr is why they could not be.
	jobs     [][]byte
	meta     []byte
	observed [][]byte
	encErr   error
	create   *createOp
	done     chan error
}

// encode fills p's encoded fields from p.ch.
func (p *pending) encode() {
	for _, j := range p.ch.Put {
		if j.ID == "" {
			p.encErr = fmt.Errorf("%w: a job with an empty id in a change of cluster %q", ErrInvalid, p.id)
			return
		}
		v, err := encodeJSON(jobKey(p.id, j.ID), j)
		if err != nil {
			p.encErr = err
			return
		}
		p.jobs = append(p.jobs, v)
	}
	if p.ch.Meta != nil {
		if p.meta, p.encErr = encodeJSON(subKey(p.id, subMeta), p.ch.Meta); p.encErr != nil {
			return
		}
	}
	for _, o := range p.ch.Observed {
		data, err := json.Marshal(o)
		if err != nil {
			p.encErr = fmt.Errorf("store: encoding an observation of cluster %q: %w", p.id, err)
			return
		}
		p.observed = append(p.observed, data)
	}
}

type clusterGen struct {
	id  string
	gen uint64
}

// group is a batch on its way to the log, with the operations it answers.
type group struct {
	batch   *pebble.Batch // nil: nothing to write
	ops     []*pending
	results []error
	written []int // the operations the batch holds
}

// committer writes the queued operations, in order, a group per batch.
type committer struct {
	engine *engine
	health *healthMonitor

	mu     sync.Mutex
	queue  []*pending
	wake   chan struct{} // 1-buffered: the queue is not empty
	closed bool
	exited chan struct{}

	// index and failed are the committer goroutine's own: the clusters'
	// indexes and the cluster generations whose changes are aborted (one
	// entry per failure).
	index  map[string]*clusterIndex
	failed map[clusterGen]bool
	// unvouched: a group was synced and no chunk written since vouches
	// for it.
	unvouched bool

	// transactions and changes count the batches synced and the operations
	// they held (see Store.Stats).
	transactions, changes atomic.Int64
	observer              *atomic.Pointer[Observer]
}

func newCommitter(e *engine, h *healthMonitor, index map[string]*clusterIndex, o *atomic.Pointer[Observer]) *committer {
	c := &committer{engine: e, health: h, index: index, observer: o, failed: map[clusterGen]bool{},
		wake: make(chan struct{}, 1), exited: make(chan struct{})}
	go c.run()
	return c
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Enqueue queues ch for cluster id at generation gen (a number below
// 1<<63 that the caller bumps each time it reloads the cluster) and returns
// a channel that receives nil once ch is durable, or why it was not
// written (ErrFailed: may or may not be durable). Changes of one caller are
// written in the order of their Enqueue calls. An empty Change is a
// barrier: it is answered once every change queued before it is durable
// (or has failed), with the first failure of its cluster's generation, if
// any.
func (s *Store) Enqueue(id string, gen uint64, ch Change) <-chan error {
	p := &pending{op: opChange, id: id, gen: gen, ch: ch}
	if !ch.empty() {
		p.encode()
	}
	return s.group.enqueue(p)
}

// Commit applies ch to cluster id atomically and durably (waiting for its
// group's sync): deletes, then puts, then meta, observations, the log and
// the policy state. ErrNotFound if the cluster or a deleted job does not
// exist; nothing is written then. Each Commit is a generation of its own,
// so a failed Commit aborts no other change.
func (s *Store) Commit(ctx context.Context, id string, ch Change) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return <-s.Enqueue(id, s.oneOffGen.Add(1), ch)
}

func (c *committer) enqueue(p *pending) <-chan error {
	p.done = make(chan error, 1)
	if err := c.health.failure(); err != nil {
		p.done <- err
		return p.done
	}
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

// close stops accepting operations, writes those queued and waits until
// every one is answered.
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
	witness := time.NewTimer(time.Hour)
	witness.Stop()
	for {
		select {
		case _, ok := <-c.wake:
			if !ok {
				// Closed: nothing can be queued any more; write what was.
				for c.writeQueued() {
				}
				return
			}
			for c.writeQueued() {
			}
			if c.unvouched {
				witness.Reset(witnessDelay)
			}
		case <-witness.C:
			c.writeWitness()
		}
	}
}

// writeQueued writes the next group of queued operations; false if there
// was none.
func (c *committer) writeQueued() bool {
	c.mu.Lock()
	n := min(len(c.queue), maxGroup)
	ops := c.queue[:n:n]
	c.queue = c.queue[n:]
	c.mu.Unlock()
	if n == 0 {
		return false
	}
	c.write(ops)
	return true
}

// write checks the operations of one group, writes those that apply as one
// batch, waits for its sync and answers every operation.
func (c *committer) write(ops []*pending) {
	g := &group{ops: ops, results: make([]error, len(ops))}
	for i, p := range ops {
		key := clusterGen{p.id, p.gen}
		switch {
		case c.health.failure() != nil:
			g.results[i] = c.health.failure()
		case c.failed[key]:
			g.results[i] = ErrAborted
		case p.op == opChange && p.ch.empty():
			// A barrier writes nothing; it only checks the cluster.
			if c.index[p.id] == nil {
				g.results[i] = fmt.Errorf("%w: cluster %q", ErrNotFound, p.id)
			}
		default:
			err := c.health.readOnly()
			if err == nil {
				err = c.check(p)
			}
			if err != nil {
				g.results[i] = err
				c.failed[key] = true
				continue
			}
			if g.batch == nil {
				g.batch = c.engine.db.NewBatch()
			}
			if err := c.apply(g.batch, p); err != nil {
				// Unreachable after check (a batch refuses writes only
				// once committed); the batch may hold part of the
				// operation, so none of the group is written.
				c.fail(g, c.health.fail(fmt.Errorf("writing a batch: %w", err)))
				break
			}
			g.written = append(g.written, i)
		}
	}
	if g.batch != nil && len(g.written) > 0 {
		start := time.Now()
		err := c.engine.applyNoSyncWait(g.batch)
		if err == nil {
			err = g.batch.SyncWait()
		}
		if err != nil {
			c.fail(g, c.health.fail(fmt.Errorf("writing the log: %w", err)))
		} else {
			c.unvouched = true
			c.transactions.Add(1)
			c.changes.Add(int64(len(g.written)))
			if o := c.observer.Load(); o != nil {
				(*o).LogSynced(time.Since(start), len(g.written))
			}
		}
	}
	if g.batch != nil && !c.engine.fatal.Load() {
		g.batch.Close()
	}
	for i, p := range g.ops {
		p.done <- g.results[i]
	}
}

// writeWitness writes and syncs an empty log record, whose chunk vouches
// for the groups synced before it.
func (c *committer) writeWitness() {
	if !c.unvouched || c.health.failure() != nil {
		return
	}
	b := c.engine.db.NewBatch()
	defer b.Close()
	err := b.LogData(nil, nil)
	if err == nil {
		err = c.engine.applyNoSyncWait(b)
	}
	if err == nil {
		err = b.SyncWait()
	}
	if err != nil {
		c.health.fail(fmt.Errorf("writing the log: %w", err))
		return
	}
	c.unvouched = false
}

// fail answers every written operation of g with err and drops its batch.
func (c *committer) fail(g *group, err error) {
	for _, i := range g.written {
		g.results[i] = err
	}
	g.written = nil
}

// check checks, without writing, that p applies to the store as the index
// holds it.
func (c *committer) check(p *pending) error {
	x := c.index[p.id]
	switch p.op {
	case opCreate:
		if x != nil {
			return fmt.Errorf("%w: cluster %q", ErrExists, p.id)
		}
		return nil
	case opDelete:
		if x == nil {
			return fmt.Errorf("%w: cluster %q", ErrNotFound, p.id)
		}
		return nil
	}
	if p.encErr != nil {
		return p.encErr
	}
	if x == nil {
		return fmt.Errorf("%w: cluster %q", ErrNotFound, p.id)
	}
	for _, jid := range p.ch.Delete {
		if !x.hasJob(jid) {
			return fmt.Errorf("%w: job %q in cluster %q", ErrNotFound, jid, p.id)
		}
	}
	if len(p.ch.Observed) > 0 && x.est == nil {
		return fmt.Errorf("%w: estimator of cluster %q (created without one)", ErrNotFound, p.id)
	}
	return nil
}

// apply writes a checked operation into b and updates the index: for a
// change, deletes, then puts, then meta, observations, the log and the
// policy state.
func (c *committer) apply(b *pebble.Batch, p *pending) error {
	switch p.op {
	case opCreate:
		x := &clusterIndex{jobs: map[string]struct{}{}}
		if err := b.Set(subKey(p.id, subDescription), p.create.desc, nil); err != nil {
			return err
		}
		mk := subKey(p.id, subMeta)
		meta, err := encodeJSON(mk, Meta{})
		if err != nil {
			return err
		}
		if err := b.Set(mk, meta, nil); err != nil {
			return err
		}
		if p.create.est != nil {
			h := *p.create.est
			if err := appendObservations(b, p.id, &h, p.create.observed); err != nil {
				return err
			}
			x.est = &h
		}
		c.index[p.id] = x
		return nil
	case opDelete:
		prefix := clusterPrefix(p.id)
		delete(c.index, p.id)
		return b.DeleteRange(prefix, prefixEnd(prefix), nil)
	}
	x, ch := c.index[p.id], &p.ch
	for _, jid := range ch.Delete {
		if err := b.Delete(jobKey(p.id, jid), nil); err != nil {
			return err
		}
		delete(x.jobs, jid)
	}
	for i, j := range ch.Put {
		if err := b.Set(jobKey(p.id, j.ID), p.jobs[i], nil); err != nil {
			return err
		}
		x.jobs[j.ID] = struct{}{}
	}
	if p.meta != nil {
		if err := b.Set(subKey(p.id, subMeta), p.meta, nil); err != nil {
			return err
		}
	}
	if len(p.observed) > 0 {
		if err := appendObservations(b, p.id, x.est, p.observed); err != nil {
			return err
		}
	}
	if ch.TruncateLog {
		if err := b.DeleteRange(subKey(p.id, subLog), subKey(p.id, subLog+1), nil); err != nil {
			return err
		}
	}
	for _, e := range ch.Log {
		k := seqKey(p.id, subLog, x.logNext)
		if err := b.Set(k, sealRecord(k, e), nil); err != nil {
			return err
		}
		x.logNext++
	}
	if ch.PolicyState != nil {
		k := subKey(p.id, subPolicy)
		if err := b.Set(k, sealRecord(k, ch.PolicyState), nil); err != nil {
			return err
		}
	}
	for _, node := range slices.Sorted(maps.Keys(ch.Beats)) {
		k := beatKey(p.id, node)
		if err := b.Set(k, sealRecord(k, ch.Beats[node]), nil); err != nil {
			return err
		}
	}
	return nil
}

// Observer is told of the store's writes and condition (the server turns
// them into metrics and health). Its methods run on the store's
// goroutines: they must be quick.
type Observer interface {
	// LogSynced: a group of changes was written to the log and synced.
	LogSynced(took time.Duration, changes int)
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
	// Transactions is the number of groups written (one synced batch
	// each).
	Transactions int64
	// Changes is the number of operations they held (barriers excluded),
	// so Changes/Transactions is the mean group size.
	Changes int64
}

// Stats returns the group commit's counters.
func (s *Store) Stats() Stats {
	return Stats{Transactions: s.group.transactions.Load(), Changes: s.group.changes.Load()}
}

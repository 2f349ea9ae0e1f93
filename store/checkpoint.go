package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Checkpoints: the logged changes reach the bbolt file.
//
// The checkpointer writes every change logged since its last checkpoint to
// bbolt in one transaction, with the LSN of the last record (key "wal_lsn"
// of bucket "optd"), and then removes the log segments that transaction
// covers. It runs at most every checkpointInterval, so under load one bbolt
// commit carries hundreds of groups; sooner when checkpointMaxChanges
// changes wait or a reader asks for a flush (Load reads bbolt, so it first
// waits for every acknowledged change to be there). A failed checkpoint is
// retried (the changes stay durable in the log meanwhile).

const (
	checkpointInterval   = 100 * time.Millisecond
	checkpointMaxChanges = 4096
	recoveryBatchBytes   = 8 << 20
)

var keyWALLSN = []byte("wal_lsn")

// walEntry is one change of a log record.
type walEntry struct {
	Cluster string `json:"cluster"`
	Change  Change `json:"change"`
}

// loggedGroup is a log record: its payload holds changes changes.
type loggedGroup struct {
	lsn     uint64
	payload []byte
	changes int
}

type flushWaiter struct {
	lsn  uint64
	done chan error
}

type checkpointer struct {
	db  *bolt.DB
	wal *walWriter

	mu       sync.Mutex
	pending  []loggedGroup
	nPending int
	applied  uint64 // LSN of the last record in bbolt
	waiters  []flushWaiter

	wake, urgent chan struct{} // 1-buffered signals
	closing      chan struct{}
	exited       chan struct{}
	closeErr     error // the final checkpoint's error (read after exited)

	checkpoints atomic.Int64
	observer    *atomic.Pointer[Observer]
	// interval is checkpointInterval (tests lengthen it to hold the
	// changes in the log).
	interval atomic.Int64
}

func newCheckpointer(db *bolt.DB, wal *walWriter, applied uint64, o *atomic.Pointer[Observer]) *checkpointer {
	c := &checkpointer{db: db, wal: wal, applied: applied, observer: o,
		wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), closing: make(chan struct{}), exited: make(chan struct{})}
	c.interval.Store(int64(checkpointInterval))
	go c.run()
	return c
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// add hands over a synced record's changes.
func (c *checkpointer) add(g loggedGroup) {
	c.mu.Lock()
	c.pending = append(c.pending, g)
	c.nPending += g.changes
	full := c.nPending >= checkpointMaxChanges
	c.mu.Unlock()
	signal(c.wake)
	if full {
		signal(c.urgent)
	}
}

// flush waits until every record up to lsn is in bbolt.
func (c *checkpointer) flush(lsn uint64) error {
	c.mu.Lock()
	if c.applied >= lsn {
		c.mu.Unlock()
		return nil
	}
	w := flushWaiter{lsn: lsn, done: make(chan error, 1)}
	c.waiters = append(c.waiters, w)
	c.mu.Unlock()
	signal(c.urgent)
	return <-w.done
}

func (c *checkpointer) run() {
	defer close(c.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		urgent := false
		select {
		case <-c.wake:
		case <-c.urgent:
			urgent = true
		case <-c.closing:
			c.closeErr = c.checkpoint()
			return
		}
		if !urgent {
			timer.Reset(time.Duration(c.interval.Load()))
			select {
			case <-timer.C:
			case <-c.urgent:
				timer.Stop()
			case <-c.closing:
				timer.Stop()
				c.closeErr = c.checkpoint()
				return
			}
		}
		if err := c.checkpoint(); err != nil {
			signal(c.wake) // retry after the interval
		}
	}
}

// close writes the last checkpoint and stops; it returns that
// checkpoint's error.
func (c *checkpointer) close() error {
	close(c.closing)
	<-c.exited
	return c.closeErr
}

// checkpoint writes the pending changes to bbolt in one transaction,
// removes the log segments it covers and answers the flushes it satisfies.
func (c *checkpointer) checkpoint() error {
	c.mu.Lock()
	batch, n := c.pending, c.nPending
	c.pending, c.nPending = nil, 0
	applied := c.applied
	c.mu.Unlock()
	var err error
	written := false
	if len(batch) > 0 {
		start := time.Now()
		err = c.db.Update(func(tx *bolt.Tx) error { return applyLogged(tx, batch) })
		if written = err == nil; written {
			applied = batch[len(batch)-1].lsn
			c.checkpoints.Add(1)
			if o := c.observer.Load(); o != nil {
				(*o).Checkpointed(time.Since(start), n)
			}
			// A failed removal leaves segments behind, for Close or the
			// next Open to remove; their changes are in bbolt either way.
			err = c.wal.release(applied)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !written {
		// Retried with what came since, in order.
		c.pending = append(batch, c.pending...)
		c.nPending += n
	}
	c.applied = applied
	kept := c.waiters[:0]
	for _, w := range c.waiters {
		switch {
		case w.lsn <= c.applied:
			w.done <- nil
		case err != nil:
			w.done <- err
		default:
			kept = append(kept, w)
		}
	}
	c.waiters = kept
	return err
}

// applyLogged writes logged records to bbolt and records the last LSN.
func applyLogged(tx *bolt.Tx, groups []loggedGroup) error {
	for _, g := range groups {
		var entries []walEntry
		if err := json.Unmarshal(g.payload, &entries); err != nil {
			return fmt.Errorf("%w: logged record %d: %w", ErrCorrupt, g.lsn, err)
		}
		for _, e := range entries {
			if err := checkChange(tx, e.Cluster, e.Change); err != nil {
				return fmt.Errorf("%w: logged record %d: %w", ErrCorrupt, g.lsn, err)
			}
			if err := writeChange(tx, e.Cluster, e.Change); err != nil {
				return err
			}
		}
	}
	return putWALLSN(tx, groups[len(groups)-1].lsn)
}

func putWALLSN(tx *bolt.Tx, lsn uint64) error {
	return tx.Bucket(bucketOptd).Put(keyWALLSN, binary.BigEndian.AppendUint64(nil, lsn))
}

// walLSN is the LSN of the last record the database holds (0: none).
func walLSN(tx *bolt.Tx) (uint64, error) {
	v := tx.Bucket(bucketOptd).Get(keyWALLSN)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: %q is %d bytes", ErrCorrupt, keyWALLSN, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// recoverLog replays the log in dir into db (the records after the
// database's LSN, in transactions of about recoveryBatchBytes of records),
// then removes the log. It returns the LSN the next record gets and the
// number of records replayed.
func recoverLog(db *bolt.DB, dir string) (next uint64, replayed int, err error) {
	var applied uint64
	if err := db.View(func(tx *bolt.Tx) (err error) {
		applied, err = walLSN(tx)
		return err
	}); err != nil {
		return 0, 0, err
	}
	var batch []loggedGroup
	n := 0
	write := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := db.Update(func(tx *bolt.Tx) error { return applyLogged(tx, batch) })
		batch, n = nil, 0
		return err
	}
	next, err = readLog(dir, applied, func(lsn uint64, payload []byte) error {
		replayed++
		batch = append(batch, loggedGroup{lsn: lsn, payload: payload})
		if n += len(payload); n >= recoveryBatchBytes {
			return write()
		}
		return nil
	})
	if err == nil {
		err = write()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("store: replaying the write-ahead log %s: %w", dir, err)
	}
	if err := removeLog(dir); err != nil {
		return 0, 0, err
	}
	return next, replayed, nil
}

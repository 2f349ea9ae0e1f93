package store

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Disk full and I/O errors.
//
// The store watches the free space of its file system (every
// Options.CheckInterval). Below Options.MinFreeBytes it turns read-only:
// every change is refused with ErrReadOnly before anything is written, so
// the engine never meets a full disk in the middle of a write; reads go on.
// Once the free space is back above the reserve by a quarter of it, changes
// are taken again. Resuming is safe because nothing failed: the refusals
// happened before any write. The engine's own background work (flushes,
// compactions) that runs out of space turns the store read-only as well, and
// the engine retries it with new files.
//
// A write or sync of the engine's log that fails anyway (another process
// filled the disk between two checks, an I/O error) fails the store for
// good: ErrFailed for every call, reads included, since the engine's memory
// may then hold changes that are not on disk. Nothing is retried (a failed
// fsync must not be retried on the same file: the kernel may have dropped
// the dirty pages and cleared the error), and optd must be restarted, which
// recovers from what is on disk.

// Health is the store's condition.
type Health struct {
	// ReadOnly: changes are refused (ErrReadOnly) until space is freed.
	ReadOnly bool
	// Failed: everything is refused (ErrFailed) until a restart.
	Failed bool
	// Reason says why, when ReadOnly or Failed.
	Reason string
	// FreeBytes is the free space of the data directory's file system at
	// the last check (-1: unknown).
	FreeBytes int64
}

// OK reports whether the store takes changes.
func (h Health) OK() bool { return !h.ReadOnly && !h.Failed }

type healthMonitor struct {
	fs      vfs.FS
	dir     string
	minFree int64
	log     *slog.Logger

	// failErr and roErr are the errors calls get (nil: none), read on every
	// call without the lock.
	failErr atomic.Pointer[error]
	roErr   atomic.Pointer[error]

	mu sync.Mutex
	h  Health
	// engineFull is set when the engine's background work ran out of
	// space; it clears with the next check that finds the reserve free.
	engineFull bool
	changed    chan struct{} // closed and replaced at every change

	stop, stopped chan struct{}
}

func newHealthMonitor(fs vfs.FS, dir string, minFree int64, log *slog.Logger) *healthMonitor {
	return &healthMonitor{fs: fs, dir: dir, minFree: minFree, log: log, h: Health{FreeBytes: -1},
		changed: make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// start checks the free space now and then every interval until close.
func (m *healthMonitor) start(interval time.Duration) {
	m.check()
	go func() {
		defer close(m.stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.check()
			}
		}
	}()
}

func (m *healthMonitor) close() {
	select {
	case <-m.stop:
	default:
		close(m.stop)
		<-m.stopped
	}
}

// failure is the store's failure, nil if none.
func (m *healthMonitor) failure() error {
	if p := m.failErr.Load(); p != nil {
		return *p
	}
	return nil
}

// readOnly is the refusal of a change while read-only, nil if none.
func (m *healthMonitor) readOnly() error {
	if p := m.roErr.Load(); p != nil {
		return *p
	}
	return nil
}

// fail fails the store for good (the first cause wins) and returns the
// error calls get.
func (m *healthMonitor) fail(cause error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.failErr.Load(); p != nil {
		return *p
	}
	err := fmt.Errorf("%w: %v; a change in progress may or may not be durable; optd refuses every call until it is restarted "+
		"(restart it once the disk is healthy; it then recovers what is on disk, and `optd store check` verifies the data directory offline)", ErrFailed, cause)
	m.failErr.Store(&err)
	m.h.Failed, m.h.Reason = true, err.Error()
	m.log.Error("storage failed", "err", cause)
	m.notifyLocked()
	return err
}

// engineOutOfSpace turns the store read-only after the engine's background
// work failed for lack of space.
func (m *healthMonitor) engineOutOfSpace(err error) {
	m.mu.Lock()
	m.engineFull = true
	m.mu.Unlock()
	m.log.Warn("storage engine out of space; refusing changes until space is freed", "err", err)
	m.check()
}

// check reads the free space and turns the store read-only or back.
func (m *healthMonitor) check() {
	free := int64(-1)
	if u, err := m.fs.GetDiskUsage(m.dir); err == nil {
		free = int64(min(u.AvailBytes, 1<<62))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.h.FreeBytes = free
	low := free >= 0 && m.minFree > 0 && free < m.minFree
	resume := free < 0 || m.minFree <= 0 || free >= m.minFree+m.minFree/4
	switch {
	case !m.h.ReadOnly && (low || m.engineFull):
		reason := fmt.Sprintf("the file system of %s has %s free, below the reserve of %s", m.dir, mib(free), mib(m.minFree))
		if !low {
			reason = fmt.Sprintf("the storage engine ran out of space writing to %s (%s free)", m.dir, mib(free))
		}
		err := fmt.Errorf("%w: %s; changes are refused until space is freed (this change was not written)", ErrReadOnly, reason)
		m.roErr.Store(&err)
		m.h.ReadOnly, m.h.Reason = true, err.Error()
		m.log.Warn("storage read-only: refusing changes", "reason", reason)
		m.notifyLocked()
	case m.h.ReadOnly && resume:
		m.roErr.Store(nil)
		m.engineFull = false
		m.h.ReadOnly = false
		if !m.h.Failed {
			m.h.Reason = ""
		}
		m.log.Info("storage writable again", "free", mib(free))
		m.notifyLocked()
	}
}

func (m *healthMonitor) notifyLocked() {
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *healthMonitor) health() Health {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.h
}

func (m *healthMonitor) changes() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

func mib(n int64) string {
	if n < 0 {
		return "an unknown amount"
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// isNoSpace reports whether err is the file system's "no space left".
func isNoSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) }

// Health returns the store's condition.
func (s *Store) Health() Health { return s.health.health() }

// HealthChanged returns a channel that is closed at the next change of
// Health.
func (s *Store) HealthChanged() <-chan struct{} { return s.health.changes() }

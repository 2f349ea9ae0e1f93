package store

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// waitHealth waits until s's health satisfies ok.
func waitHealth(t *testing.T, s *Store, ok func(Health) bool) Health {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		changed := s.HealthChanged()
		if h := s.Health(); ok(h) {
			return h
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("health stayed %+v", s.Health())
		}
	}
}

func setFree(fs *vfs.MemFS, free uint64) {
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: free, TotalBytes: 1 << 40, UsedBytes: 1<<40 - free})
}

// TestReadOnlyBelowReserve: below the free-space reserve the store refuses
// changes (ErrReadOnly, a message naming the free space and the reserve)
// without writing them, serves reads, and takes changes again once space
// is back.
func TestReadOnlyBelowReserve(t *testing.T) {
	fs := vfs.NewMem()
	setFree(fs, 1<<30)
	o := memOptions(fs)
	o.MinFreeBytes, o.CheckInterval = 10<<20, 5*time.Millisecond
	s, err := OpenWith(memDir, o)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	createCluster(t, s, "c")
	if err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "before", Seq: 1}}}); err != nil {
		t.Fatal(err)
	}
	setFree(fs, 3<<20)
	h := waitHealth(t, s, func(h Health) bool { return h.ReadOnly })
	if h.OK() || h.FreeBytes != 3<<20 || !strings.Contains(h.Reason, "3.0 MiB free") || !strings.Contains(h.Reason, "10.0 MiB") {
		t.Errorf("health = %+v", h)
	}
	err = s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "refused", Seq: 2}}})
	if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("Commit while read-only = %v, want ErrReadOnly", err)
	}
	if err := s.Create(t.Context(), Cluster{ID: "new"}, nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("Create while read-only = %v", err)
	}
	st, err := s.Load(t.Context(), "c")
	if err != nil || len(st.Jobs) != 1 || st.Jobs[0].ID != "before" {
		t.Fatalf("Load while read-only = %+v, %v; want the job before only", st, err)
	}
	// Just above the reserve is not enough (hysteresis), a quarter more is.
	setFree(fs, 11<<20)
	time.Sleep(50 * time.Millisecond)
	if !s.Health().ReadOnly {
		t.Error("writable again at 11 MiB free, want a margin above the 10 MiB reserve")
	}
	setFree(fs, 13<<20)
	waitHealth(t, s, Health.OK)
	if err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "after", Seq: 3}}}); err != nil {
		t.Fatalf("Commit after space returned: %v", err)
	}
}

// failingSyncs is a file system whose log syncs fail once armed, and which
// counts the syncs of logs attempted after the first failure.
type failingSyncs struct {
	armed, failed atomic.Bool
	syncsAfter    atomic.Int64
	fs            *errorfs.FS
	underlying    *vfs.MemFS
}

func newFailingSyncs(err error) *failingSyncs {
	f := &failingSyncs{underlying: vfs.NewCrashableMem()}
	f.fs = errorfs.Wrap(f.underlying, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		if op.Kind != errorfs.OpFileSync && op.Kind != errorfs.OpFileSyncData && op.Kind != errorfs.OpFileSyncTo {
			return nil
		}
		if f.failed.Load() {
			f.syncsAfter.Add(1)
		}
		if f.armed.Load() {
			f.failed.Store(true)
			return err
		}
		return nil
	}))
	return f
}

// TestLogSyncFailureFailsTheStore: a failed sync of the log fails the
// store: the change gets ErrFailed ("may or may not be durable"), so does
// everything after, reads included; the health says so; the sync is never
// tried again; and what was acknowledged before is on disk.
func TestLogSyncFailureFailsTheStore(t *testing.T) {
	for _, inject := range []error{syscall.EIO, syscall.ENOSPC} {
		t.Run(inject.Error(), func(t *testing.T) {
			f := newFailingSyncs(inject)
			s := openMem(t, f.fs)
			createCluster(t, s, "c")
			if err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "acked", Seq: 1}}}); err != nil {
				t.Fatal(err)
			}
			f.armed.Store(true)
			err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "failed", Seq: 2}}})
			if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "may or may not be durable") || !strings.Contains(err.Error(), "restart") {
				t.Fatalf("Commit with a failing sync = %v, want ErrFailed", err)
			}
			h := s.Health()
			if !h.Failed || h.OK() {
				t.Errorf("health after the failure = %+v", h)
			}
			if err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "later", Seq: 3}}}); !errors.Is(err, ErrFailed) {
				t.Errorf("Commit after the failure = %v, want ErrFailed", err)
			}
			if _, err := s.Load(t.Context(), "c"); !errors.Is(err, ErrFailed) {
				t.Errorf("Load after the failure = %v, want ErrFailed", err)
			}
			time.Sleep(20 * witnessDelay)
			s.Close()
			if n := f.syncsAfter.Load(); n > 0 {
				t.Errorf("%d log syncs after the failed one, want none", n)
			}
			// Power loss, then a restart: the acknowledged change is there.
			f.armed.Store(false)
			s = openMem(t, f.underlying.CrashClone(vfs.CrashCloneCfg{}))
			defer s.Close()
			st, err := s.Load(t.Context(), "c")
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Jobs) == 0 || st.Jobs[0].ID != "acked" || len(st.Jobs) > 2 {
				t.Errorf("after a restart: jobs %+v, want the acknowledged one (and perhaps the failed one)", st.Jobs)
			}
		})
	}
}

// TestLogCreationFailureFailsTheStore: when the engine cannot create its
// next log (it panics on the committing goroutine), the store fails with
// ErrFailed instead of the process dying, and what was acknowledged is
// there after a restart.
func TestLogCreationFailureFailsTheStore(t *testing.T) {
	var armed atomic.Bool
	mem := vfs.NewCrashableMem()
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if armed.Load() && op.Kind == errorfs.OpCreate && strings.HasSuffix(op.Path, ".log") {
			return syscall.EIO
		}
		return nil
	}))
	s := openMem(t, fs)
	createCluster(t, s, "c")
	armed.Store(true)
	acked := 0
	var err error
	for k := 0; k < 5000 && err == nil; k++ {
		// A memtable's worth of changes makes the engine move to a new log.
		err = s.Commit(t.Context(), "c", Change{Put: []Job{{ID: fmt.Sprint("j", k), Seq: int64(k + 1)}}, Log: [][]byte{make([]byte, 200)}})
		if err == nil {
			acked++
		}
	}
	if !errors.Is(err, ErrFailed) || !s.Health().Failed {
		t.Fatalf("after %d changes: %v, health %+v; want ErrFailed", acked, err, s.Health())
	}
	s.Close()
	s = openMem(t, mem.CrashClone(vfs.CrashCloneCfg{}))
	defer s.Close()
	st, err := s.Load(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) < acked {
		t.Errorf("%d jobs after a restart, %d were acknowledged", len(st.Jobs), acked)
	}
}

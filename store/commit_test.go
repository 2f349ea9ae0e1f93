package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/optd/optd/thresholds"
)

// TestGroupCommitOrderAndDurability: changes queued by many goroutines on
// several clusters are all durable after their acknowledgement, each
// goroutine's changes apply in its queue order, and a reopened store holds
// exactly the acknowledged state.
func TestGroupCommitOrderAndDurability(t *testing.T) {
	path := t.TempDir()
	s := open(t, path)
	const clusters, perCluster = 4, 200
	for c := range clusters {
		createCluster(t, s, fmt.Sprint("c", c))
	}
	var wg sync.WaitGroup
	errs := make(chan error, clusters)
	for c := range clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprint("c", c)
			var waits []<-chan error
			// Job k is put, then (k odd) deleted again by a later change:
			// order matters, a delete before its put would fail.
			for k := range perCluster {
				jid := fmt.Sprint("j", k)
				waits = append(waits, s.Enqueue(id, 1, Change{Put: []Job{{ID: jid, Seq: int64(k + 1)}}, Meta: &Meta{LastSeq: int64(k + 1)}}))
				if k%2 == 1 {
					waits = append(waits, s.Enqueue(id, 1, Change{Delete: []string{jid}}))
				}
			}
			for _, w := range waits {
				if err := <-w; err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	defer s.Close()
	for c := range clusters {
		st, err := s.Load(t.Context(), fmt.Sprint("c", c))
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Jobs) != perCluster/2 || st.Meta.LastSeq != perCluster {
			t.Errorf("c%d: %d jobs, last seq %d; want %d, %d", c, len(st.Jobs), st.Meta.LastSeq, perCluster/2, perCluster)
		}
		for k, j := range st.Jobs {
			if j.ID != fmt.Sprint("j", 2*k) {
				t.Errorf("c%d: job %d is %s", c, k, j.ID)
			}
		}
	}
}

// TestGroupCommitAbortsAfterFailure: after a change of a cluster generation
// fails, the later changes of that generation are aborted unwritten, while
// other generations and clusters go on.
func TestGroupCommitAbortsAfterFailure(t *testing.T) {
	s := open(t, t.TempDir())
	defer s.Close()
	createCluster(t, s, "a")
	createCluster(t, s, "b")
	bad := s.Enqueue("a", 1, Change{Delete: []string{"missing"}})
	after := s.Enqueue("a", 1, Change{Put: []Job{{ID: "depends-on-bad", Seq: 1}}})
	barrier := s.Enqueue("a", 1, Change{})
	other := s.Enqueue("b", 1, Change{Put: []Job{{ID: "fine", Seq: 1}}})
	next := s.Enqueue("a", 2, Change{Put: []Job{{ID: "reloaded", Seq: 1}}})
	if err := <-bad; !errors.Is(err, ErrNotFound) {
		t.Errorf("bad change: %v, want ErrNotFound", err)
	}
	if err := <-after; !errors.Is(err, ErrAborted) {
		t.Errorf("change after the failure: %v, want ErrAborted", err)
	}
	if err := <-barrier; !errors.Is(err, ErrAborted) {
		t.Errorf("barrier after the failure: %v, want ErrAborted", err)
	}
	if err := <-other; err != nil {
		t.Errorf("other cluster: %v", err)
	}
	if err := <-next; err != nil {
		t.Errorf("next generation: %v", err)
	}
	st, err := s.Load(t.Context(), "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 1 || st.Jobs[0].ID != "reloaded" {
		t.Errorf("cluster a holds %+v, want only the next generation's job", st.Jobs)
	}
	// A barrier on an unknown cluster says so.
	if err := <-s.Enqueue("zz", 1, Change{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("barrier on unknown cluster: %v", err)
	}
}

// TestCloseWritesQueuedChanges: Close writes what was queued; Enqueue after
// Close answers ErrClosed.
func TestCloseWritesQueuedChanges(t *testing.T) {
	path := t.TempDir()
	s := open(t, path)
	createCluster(t, s, "c")
	var waits []<-chan error
	for k := range 50 {
		waits = append(waits, s.Enqueue("c", 1, Change{Put: []Job{{ID: fmt.Sprint("j", k), Seq: int64(k + 1)}}}))
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, w := range waits {
		if err := <-w; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-s.Enqueue("c", 1, Change{Put: []Job{{ID: "late"}}}); !errors.Is(err, ErrClosed) {
		t.Errorf("enqueue after close: %v", err)
	}
	s = open(t, path)
	defer s.Close()
	st, err := s.Load(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 50 {
		t.Errorf("%d jobs after reopening, want 50", len(st.Jobs))
	}
}

// BenchmarkCommit compares one change per transaction (waiting for each)
// with group commit (16 writers queueing concurrently): changes per second
// and the mean group size (changes per fsynced transaction).
func BenchmarkCommit(b *testing.B) {
	for _, writers := range []int{1, 16} {
		b.Run(fmt.Sprint("writers=", writers), func(b *testing.B) {
			s, err := Open(b.TempDir(), 0)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if err := s.Create(b.Context(), Cluster{ID: "c"}, nil); err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			per := b.N/writers + 1
			b.ResetTimer()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := range per {
						if err := <-s.Enqueue("c", 1, Change{Put: []Job{{ID: fmt.Sprint(w, "-", k)}}}); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(per*writers)/b.Elapsed().Seconds(), "changes/s")
			st := s.Stats()
			b.ReportMetric(float64(st.Changes)/float64(st.Transactions), "changes/tx")
		})
	}
}

// TestDeleteCluster: Delete removes a cluster and everything stored about
// it, durably; its id can be registered again, empty; a missing cluster is
// ErrNotFound.
func TestDeleteCluster(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	est := &thresholds.EstimatorState{Window: 2}
	if err := s.Create(t.Context(), Cluster{ID: "gone"}, est); err != nil {
		t.Fatal(err)
	}
	createCluster(t, s, "kept")
	full := Change{Put: []Job{{ID: "j", Seq: 1}}, Meta: &Meta{LastSeq: 1}, Observed: []thresholds.Observation{{Data: 1, Reduces: 1}},
		Log: [][]byte{[]byte("e1"), []byte("e2")}, PolicyState: []byte("p")}
	for _, id := range []string{"gone", "kept"} {
		ch := full
		if id == "kept" {
			ch.Observed = nil
		}
		if err := s.Commit(t.Context(), id, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(t.Context(), "gone"); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Delete = %v, want ErrNotFound", err)
	}
	if err := s.Commit(t.Context(), "gone", Change{Meta: &Meta{}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("change of a deleted cluster = %v, want ErrNotFound", err)
	}
	s.Close()
	s = open(t, dir)
	defer s.Close()
	if ids, _ := s.List(); !reflect.DeepEqual(ids, []string{"kept"}) {
		t.Errorf("List after Delete = %v", ids)
	}
	if _, err := s.Load(t.Context(), "gone"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after Delete = %v, want ErrNotFound", err)
	}
	kept, err := s.Load(t.Context(), "kept")
	if err != nil || len(kept.Jobs) != 1 || len(kept.Log) != 2 || string(kept.PolicyState) != "p" {
		t.Errorf("the other cluster after Delete: %+v, %v", kept, err)
	}
	if err := s.Create(t.Context(), Cluster{ID: "gone"}, nil); err != nil {
		t.Fatal(err)
	}
	again, err := s.Load(t.Context(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Jobs) != 0 || again.Log != nil || again.PolicyState != nil || again.Estimator != nil || again.Meta != (Meta{}) {
		t.Errorf("a cluster registered again after Delete holds %+v", again)
	}
}

// TestPolicyState: the opaque policy state is stored as given, replaced by
// a non-nil Change.PolicyState (an empty one included), kept by a nil one,
// durable across reopening, and refused when damaged.
func TestPolicyState(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createCluster(t, s, "c")
	load := func(s *Store) []byte {
		t.Helper()
		st, err := s.Load(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		return st.PolicyState
	}
	if got := load(s); got != nil {
		t.Errorf("a new cluster's policy state = %q, want nil", got)
	}
	blob := []byte{0, 1, 2, 0xff, '{'}
	steps := []struct {
		set, want []byte
	}{
		{blob, blob},
		{nil, blob},
		{[]byte{}, []byte{}},
		{[]byte("v2"), []byte("v2")},
	}
	for i, st := range steps {
		if err := s.Commit(t.Context(), "c", Change{PolicyState: st.set, Meta: &Meta{LastSeq: int64(i)}}); err != nil {
			t.Fatal(err)
		}
		if got := load(s); !bytes.Equal(got, st.want) || (got == nil) != (st.want == nil) {
			t.Errorf("step %d: policy state %q, want %q", i, got, st.want)
		}
	}
	s.Close()
	s = open(t, dir)
	if got := load(s); string(got) != "v2" {
		t.Errorf("after reopening: %q", got)
	}
	// One flipped bit in the stored record: Load refuses it.
	k := subKey("c", subPolicy)
	v, closer, err := s.engine.db.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(v)
	closer.Close()
	bad[2] ^= 0x10
	if err := s.engine.db.Set(k, bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(t.Context(), "c"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Load of a damaged policy state = %v, want ErrCorrupt", err)
	}
	s.Close()
	if _, err := Open(dir, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `K/"c"/p`) {
		t.Errorf("Open with a damaged policy state = %v, want ErrCorrupt naming the key", err)
	}
}

// TestBeats: each node's heartbeat record is stored as given, replaced per
// node (the others kept), durable across reopening, removed with its
// cluster, and refused when damaged, naming its key.
func TestBeats(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createCluster(t, s, "c")
	load := func(s *Store) map[string][]byte {
		t.Helper()
		st, err := s.Load(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		return st.Beats
	}
	want := map[string][]byte{}
	steps := []map[string][]byte{
		{"n1": []byte("a")},
		{"n2": {0, 0xff}, "n/3": []byte("{")},
		{"n1": []byte("b")},
		{},
	}
	for i, beats := range steps {
		if err := s.Commit(t.Context(), "c", Change{Beats: beats, Meta: &Meta{LastSeq: int64(i)}}); err != nil {
			t.Fatal(err)
		}
		maps.Copy(want, beats)
		if got := load(s); !reflect.DeepEqual(got, want) {
			t.Errorf("step %d: beats %q, want %q", i, got, want)
		}
	}
	s.Close()
	s = open(t, dir)
	if got := load(s); !reflect.DeepEqual(got, want) {
		t.Errorf("after reopening: %q, want %q", got, want)
	}
	if err := s.Delete(t.Context(), "c"); err != nil {
		t.Fatal(err)
	}
	createCluster(t, s, "c")
	if got := load(s); got != nil {
		t.Errorf("a cluster registered again after Delete has beats %q", got)
	}
	if err := s.Commit(t.Context(), "c", Change{Beats: map[string][]byte{"n1": []byte("again")}}); err != nil {
		t.Fatal(err)
	}
	k := beatKey("c", "n1")
	v, closer, err := s.engine.db.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(v)
	closer.Close()
	bad[len(bad)-1] ^= 0x01
	if err := s.engine.db.Set(k, bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(t.Context(), "c"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `K/"c"/b/"n1"`) {
		t.Errorf("Load of a damaged heartbeat record = %v, want ErrCorrupt naming the key", err)
	}
	s.Close()
}

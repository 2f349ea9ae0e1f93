package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

func createCluster(t *testing.T, s *Store, id string) {
	t.Helper()
	if err := s.Create(t.Context(), Cluster{ID: id, Nodes: []Node{{ID: "n"}}, Slots: []Slot{{Node: "n", FetchCost: 1}}}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitOrderAndDurability: changes queued by many goroutines on
// several clusters are all durable after their acknowledgement, each
// goroutine's changes apply in its queue order, and a reopened store holds
// exactly the acknowledged state.
func TestGroupCommitOrderAndDurability(t *testing.T) {
	path := filepath.Join(t.TempDir(), "optd.db")
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
	s := open(t, filepath.Join(t.TempDir(), "optd.db"))
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
	path := filepath.Join(t.TempDir(), "optd.db")
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
			s, err := Open(filepath.Join(b.TempDir(), "optd.db"), 0)
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

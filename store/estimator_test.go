package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/optd/optd/thresholds"
)

// TestEstimatorRingMatchesEstimator: observations appended one commit at a
// time, past the window several times and across reopenings, load as the
// snapshot of a thresholds.Estimator fed the same observations (the second
// method).
func TestEstimatorRingMatchesEstimator(t *testing.T) {
	const window = 4
	path := filepath.Join(t.TempDir(), "optd.db")
	s := open(t, path)
	ref, err := thresholds.NewEstimator(window)
	if err != nil {
		t.Fatal(err)
	}
	start := ref.Snapshot()
	if err := s.Create(t.Context(), Cluster{ID: "c"}, &start); err != nil {
		t.Fatal(err)
	}
	for k := range 3*window + 1 {
		o := thresholds.Observation{JobsInSystem: k % 3, Data: float64(k) * 1.5, Reduces: 1 + k%2}
		if err := ref.Observe(o); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(t.Context(), "c", Change{Observed: []thresholds.Observation{o}}); err != nil {
			t.Fatal(err)
		}
		if k%5 == 0 {
			s.Close()
			s = open(t, path)
		}
		st, err := s.Load(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		if want := ref.Snapshot(); !reflect.DeepEqual(*st.Estimator, want) {
			t.Fatalf("after %d observations: stored %+v, estimator %+v", k+1, *st.Estimator, want)
		}
	}
	s.Close()
}

// TestObservedNeedsEstimator: observations for a cluster created without an
// estimator are refused and nothing of the change is written.
func TestObservedNeedsEstimator(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "optd.db"))
	defer s.Close()
	createCluster(t, s, "c")
	err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "j", Seq: 1}}, Observed: []thresholds.Observation{{Reduces: 1}}})
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Commit = %v, want ErrNotFound", err)
	}
	st, err := s.Load(t.Context(), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Jobs) != 0 || st.Estimator != nil {
		t.Errorf("after the refused change: jobs %v, estimator %v", st.Jobs, st.Estimator)
	}
}

// TestCreateRefusesInconsistentWindow: a window that is not the last
// min(seen, ω) observations is refused and no cluster is created.
func TestCreateRefusesInconsistentWindow(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "optd.db"))
	defer s.Close()
	bad := &thresholds.EstimatorState{Window: 3, Seen: 5, Observations: []thresholds.Observation{{Reduces: 1}}}
	if err := s.Create(t.Context(), Cluster{ID: "c"}, bad); err == nil {
		t.Fatal("Create accepted 1 observation of 5 seen with window 3")
	}
	if _, err := s.Load(t.Context(), "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after the refused Create = %v, want ErrNotFound", err)
	}
}

// TestCommitPagesIndependentOfDescription: a PlaceReduces-like commit (one
// job, one observation) writes as many pages on a cluster of 10 slots as on
// one of 5000, and hardly more with a window of 1000 than with one of 10:
// neither the description nor the window is rewritten.
func TestCommitPagesIndependentOfDescription(t *testing.T) {
	pages := func(slots, window int) int64 {
		s := open(t, filepath.Join(t.TempDir(), "optd.db"))
		defer s.Close()
		c := Cluster{ID: "c", Nodes: []Node{{ID: "n"}}}
		for v := range slots {
			c.Slots = append(c.Slots, Slot{Node: "n", FetchCost: float64(v%7) + 1})
		}
		ref, err := thresholds.NewEstimator(window)
		if err != nil {
			t.Fatal(err)
		}
		for k := range window {
			if err := ref.Observe(thresholds.Observation{Data: float64(k), Reduces: 1}); err != nil {
				t.Fatal(err)
			}
		}
		est := ref.Snapshot()
		if err := s.Create(t.Context(), c, &est); err != nil {
			t.Fatal(err)
		}
		var jobs []Job
		for k := range 200 {
			jobs = append(jobs, Job{ID: fmt.Sprint("j", k), Reduces: 1, Seq: int64(k + 1)})
		}
		if err := s.Commit(t.Context(), "c", Change{Put: jobs}); err != nil {
			t.Fatal(err)
		}
		before := s.db.Stats()
		const n = 20
		for k := range n {
			j := jobs[k]
			j.Placed, j.Slots = true, []int{k}
			if err := s.Commit(t.Context(), "c", Change{Put: []Job{j}, Observed: []thresholds.Observation{{Data: 1, Reduces: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		after := s.db.Stats()
		d := after.Sub(&before)
		return d.TxStats.GetPageCount() / n
	}
	small, large, wide := pages(10, 10), pages(5000, 10), pages(10, 1000)
	if large != small {
		t.Errorf("pages per commit: %d with 10 slots, %d with 5000; want equal", small, large)
	}
	// A window of 1000 (~45 KiB of JSON, 11 pages) is a deeper B+tree: a
	// commit rewrites one more leaf-to-root path of it, not the window.
	if wide > small+3 {
		t.Errorf("pages per commit: %d with window 10, %d with window 1000; want at most 3 more", small, wide)
	}
	t.Logf("pages allocated per commit: %d (window 10), %d (window 1000)", small, wide)
}

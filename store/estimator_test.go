package store

import (
	"errors"
	"fmt"
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
	path := t.TempDir()
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
	s := open(t, t.TempDir())
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
	s := open(t, t.TempDir())
	defer s.Close()
	bad := &thresholds.EstimatorState{Window: 3, Seen: 5, Observations: []thresholds.Observation{{Reduces: 1}}}
	if err := s.Create(t.Context(), Cluster{ID: "c"}, bad); err == nil {
		t.Fatal("Create accepted 1 observation of 5 seen with window 3")
	}
	if _, err := s.Load(t.Context(), "c"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load after the refused Create = %v, want ErrNotFound", err)
	}
}

// TestCommitBytesIndependentOfDescription: a PlaceReduces-like commit (one
// job, one observation) logs as many bytes on a cluster of 10 slots as on
// one of 5000, and as many with a window of 1000 as with one of 10: neither
// the description nor the window is rewritten.
func TestCommitBytesIndependentOfDescription(t *testing.T) {
	logged := func(slots, window int) uint64 {
		s := open(t, t.TempDir())
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
		before := s.engine.db.Metrics().WAL.BytesIn
		const n = 20
		for k := range n {
			j := jobs[k]
			j.Placed, j.Slots = true, []int{k}
			if err := s.Commit(t.Context(), "c", Change{Put: []Job{j}, Observed: []thresholds.Observation{{Data: 1, Reduces: 1}}}); err != nil {
				t.Fatal(err)
			}
		}
		return (s.engine.db.Metrics().WAL.BytesIn - before) / n
	}
	small, large, wide := logged(10, 10), logged(5000, 10), logged(10, 1000)
	if large != small || wide > small+8 {
		t.Errorf("log bytes per commit: %d (10 slots, window 10), %d (5000 slots), %d (window 1000); want equal up to the header's digits", small, large, wide)
	}
	t.Logf("log bytes per commit: %d", small)
}

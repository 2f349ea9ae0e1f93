package store

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/optd/optd/thresholds"
)

func open(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRoundTripAndErrors(t *testing.T) {
	path := t.TempDir()
	s := open(t, path)
	ctx := t.Context()
	c := Cluster{ID: "c", Nodes: []Node{{ID: "n", Rack: "r", Capacity: map[string]float64{"cpu": 4}}},
		Slots: []Slot{{Node: "n", FetchCost: 1}, {Node: "n", FetchCost: 2}}, Policy: Policy{Name: "greedy"}}
	est := &thresholds.EstimatorState{Window: 3}
	if err := s.Create(ctx, c, est); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, c, nil); !errors.Is(err, ErrExists) {
		t.Errorf("second Create = %v, want ErrExists", err)
	}
	j1 := Job{ID: "j1", Reduces: 1, Seq: 1}
	j2 := Job{ID: "j2", Reduces: 2, Seq: 2, Placed: true, Slots: []int{0, 1}, DataMB: 3}
	est2 := &thresholds.EstimatorState{Window: 3, Observations: []thresholds.Observation{{Data: 3, Reduces: 2}}, Seen: 1}
	if err := s.Commit(ctx, "c", Change{Put: []Job{j2, j1}, Meta: &Meta{LastSeq: 2}, Observed: est2.Observations}); err != nil {
		t.Fatal(err)
	}
	// Failing changes write nothing: unknown job to delete, unknown
	// cluster, cancelled context.
	if err := s.Commit(ctx, "c", Change{Put: []Job{{ID: "x", Seq: 9}}, Delete: []string{"nope"}}); !errors.Is(err, ErrNotFound) {
		t.Errorf("delete unknown job = %v", err)
	}
	if err := s.Commit(ctx, "zz", Change{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown cluster = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.Commit(cctx, "c", Change{Delete: []string{"j1"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled = %v", err)
	}
	// Another process (here: another Open) cannot open the file.
	if _, err := Open(path, 50*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open = %v, want ErrLocked", err)
	}
	s.Close()

	s = open(t, path)
	defer s.Close()
	got, err := s.Load(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	want := &State{Cluster: c, Meta: Meta{LastSeq: 2}, Jobs: []Job{j1, j2}, Estimator: est2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Load = %+v\nwant   %+v", got, want)
	}
	if ids, _ := s.List(); !reflect.DeepEqual(ids, []string{"c"}) {
		t.Errorf("List = %v", ids)
	}
	if _, err := s.Load(ctx, "zz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Load unknown = %v", err)
	}
}

// createCluster creates cluster id with one node and two slots, no
// estimator.
func createCluster(t testing.TB, s *Store, id string) {
	t.Helper()
	c := Cluster{ID: id, Nodes: []Node{{ID: "n"}}, Slots: []Slot{{Node: "n", FetchCost: 1}, {Node: "n", FetchCost: 2}}, Policy: Policy{Name: "greedy"}}
	if err := s.Create(context.Background(), c, nil); err != nil {
		t.Fatal(err)
	}
}

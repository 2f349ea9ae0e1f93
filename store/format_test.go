package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/thresholds"
)

// writeFormat1 writes st as optd's format-1 store did (before the "optd"
// bucket): description and whole estimator window as JSON values of the
// cluster bucket, event log in bucket "log".
func writeFormat1(t *testing.T, path string, st *State) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put := func(b *bolt.Bucket, key string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Put([]byte(key), data); err != nil {
			t.Fatal(err)
		}
	}
	err = db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucket([]byte("clusters"))
		if err != nil {
			return err
		}
		b, err := root.CreateBucket([]byte(st.Cluster.ID))
		if err != nil {
			return err
		}
		jobs, err := b.CreateBucket([]byte("jobs"))
		if err != nil {
			return err
		}
		put(b, "cluster", st.Cluster)
		put(b, "meta", st.Meta)
		if st.Estimator != nil {
			put(b, "estimator", st.Estimator)
		}
		for _, j := range st.Jobs {
			put(jobs, j.ID, j)
		}
		if len(st.Log) > 0 {
			lb, err := b.CreateBucket([]byte("log"))
			if err != nil {
				return err
			}
			for i, e := range st.Log {
				if err := lb.Put(binary.BigEndian.AppendUint64(nil, uint64(i+1)), e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenMigratesFormat1: a format-1 database loads the same after Open,
// stays loadable after reopening (the migration ran once) and takes new
// changes.
func TestOpenMigratesFormat1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "optd.db")
	want := &State{
		Cluster: Cluster{ID: "old", Nodes: []Node{{ID: "n", Rack: "r"}}, Slots: []Slot{{Node: "n", FetchCost: 1}, {Node: "n", FetchCost: 3}},
			Policy: Policy{Name: "receding-horizon", Window: 2}},
		Meta: Meta{LastSeq: 5, Finished: 3},
		Jobs: []Job{{ID: "a", Reduces: 1, Seq: 4, Placed: true, Slots: []int{1}, DataMB: 2}, {ID: "b", Reduces: 1, Seq: 5}},
		Estimator: &thresholds.EstimatorState{Window: 2, Seen: 4,
			Observations: []thresholds.Observation{{JobsInSystem: 1, Data: 7, Reduces: 1}, {JobsInSystem: 0, Data: 2, Reduces: 1}}},
		Log: [][]byte{[]byte("first"), []byte("second")},
	}
	writeFormat1(t, path, want)
	for round := range 2 {
		s := open(t, path)
		got, err := s.Load(t.Context(), "old")
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round %d: Load = %+v\nwant   %+v", round, got, want)
		}
		s.Close()
	}
	s := open(t, path)
	defer s.Close()
	o := thresholds.Observation{JobsInSystem: 1, Data: 5, Reduces: 1}
	if err := s.Commit(t.Context(), "old", Change{Observed: []thresholds.Observation{o}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(t.Context(), "old")
	if err != nil {
		t.Fatal(err)
	}
	wantEst := thresholds.EstimatorState{Window: 2, Seen: 5, Observations: []thresholds.Observation{want.Estimator.Observations[1], o}}
	if !reflect.DeepEqual(*got.Estimator, wantEst) {
		t.Errorf("estimator after a new observation = %+v, want %+v", *got.Estimator, wantEst)
	}
}

// TestOpenRefusesNewerFormat: a database of a later format is refused with
// ErrFormat naming both versions, and left as it was.
func TestOpenRefusesNewerFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "optd.db")
	s := open(t, path)
	createCluster(t, s, "c")
	err := s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketOptd).Put(keyFormat, []byte(strconv.Itoa(formatVersion+1)))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(path, 0)
	newer, ours := fmt.Sprint("format ", formatVersion+1), fmt.Sprint("up to ", formatVersion)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), newer) || !strings.Contains(err.Error(), ours) {
		t.Fatalf("Open = %v, want ErrFormat naming %q and %q", err, newer, ours)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the refused database was modified")
	}
}

// TestMigrationFailureWritesNothing: a format-1 database with an undecodable
// estimator is refused as corrupt and stays format 1.
func TestMigrationFailureWritesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "optd.db")
	writeFormat1(t, path, &State{Cluster: Cluster{ID: "c"}})
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketClusters).Bucket([]byte("c")).Put(keyEstimator, []byte("{not json"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, 0); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `cluster "c"`) {
		t.Fatalf("Open = %v, want ErrCorrupt naming the cluster", err)
	}
	db, err = bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketOptd) != nil || tx.Bucket(bucketClusters).Bucket([]byte("c")).Get(keyCluster) == nil {
			t.Error("the failed migration left changes behind")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOpenUpgradesFormat2: a format-2 database (no write-ahead log) opens
// with its state, and is marked format 3 so that a format-2 optd refuses it.
func TestOpenUpgradesFormat2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "optd.db")
	s := open(t, path)
	createCluster(t, s, "c")
	if err := s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketOptd).Put(keyFormat, []byte("2")) }); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = open(t, path)
	putJobs(t, s, "c", 0, 2)
	s.Close()
	if n := loadJobs(t, path, "c"); n != 2 {
		t.Fatalf("%d jobs, want 2", n)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket(bucketOptd).Get(keyFormat)); v != strconv.Itoa(formatVersion) {
			t.Errorf("format %q after opening a format-2 database, want %d", v, formatVersion)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

package store

import (
	"archive/tar"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/thresholds"
)

// format3Dir extracts the format-3 data directory of testdata/format3 (see
// its README) into a new temporary directory and returns it with the
// states its clusters held.
func format3Dir(t *testing.T) (string, map[string]*State) {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Open("testdata/format3/format3.tar.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, h.Name)
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o700); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile("testdata/format3/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]*State
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	return dir, want
}

// checkStates compares every cluster of s with want.
func checkStates(t *testing.T, s *Store, want map[string]*State) {
	t.Helper()
	ids, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if wantIDs := slices.Sorted(maps.Keys(want)); !slices.Equal(ids, wantIDs) {
		t.Fatalf("clusters %v, want %v", ids, wantIDs)
	}
	for id, w := range want {
		got, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if !sameState(got, w) {
			t.Errorf("cluster %s:\n got %+v\nwant %+v", id, got, w)
		}
	}
}

// TestMigrateFormat3: a data directory written by the format-3 store (bbolt
// and its write-ahead log, after a crash: 11 changes in the log only) opens
// with every cluster as that store loaded it, keeps the old files renamed,
// and migrates once.
func TestMigrateFormat3(t *testing.T) {
	dir, want := format3Dir(t)
	s := open(t, dir)
	if got := s.Recovered().MigratedFrom; got != 3 {
		t.Errorf("MigratedFrom = %d, want 3", got)
	}
	checkStates(t, s, want)
	s.Close()
	for _, name := range []string{"optd.db.format3.migrated", "optd.db.wal.format3.migrated"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the old file is not kept: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, legacyDBFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("optd.db is still there: %v", err)
	}
	s = open(t, dir)
	defer s.Close()
	if got := s.Recovered().MigratedFrom; got != 0 {
		t.Errorf("second Open migrated again (from %d)", got)
	}
	checkStates(t, s, want)
	rep, err := Check(dir, Options{})
	if err == nil && len(rep.Problems) == 0 {
		t.Error("Check ran while the store was open")
	}
}

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

// TestMigrateFormat1: a format-1 database opens with its state and takes
// new changes.
func TestMigrateFormat1(t *testing.T) {
	dir := t.TempDir()
	want := &State{
		Cluster: Cluster{ID: "old", Nodes: []Node{{ID: "n", Rack: "r"}}, Slots: []Slot{{Node: "n", FetchCost: 1}, {Node: "n", FetchCost: 3}},
			Policy: Policy{Name: "receding-horizon", Window: 2}},
		Meta: Meta{LastSeq: 5, Finished: 3},
		Jobs: []Job{{ID: "a", Reduces: 1, Seq: 4, Placed: true, Slots: []int{1}, DataMB: 2}, {ID: "b", Reduces: 1, Seq: 5}},
		Estimator: &thresholds.EstimatorState{Window: 2, Seen: 4,
			Observations: []thresholds.Observation{{JobsInSystem: 1, Data: 7, Reduces: 1}, {JobsInSystem: 0, Data: 2, Reduces: 1}}},
		Log: [][]byte{[]byte("first"), []byte("second")},
	}
	writeFormat1(t, filepath.Join(dir, legacyDBFile), want)
	s := open(t, dir)
	defer s.Close()
	if got := s.Recovered().MigratedFrom; got != 1 {
		t.Errorf("MigratedFrom = %d, want 1", got)
	}
	checkStates(t, s, map[string]*State{"old": want})
	o := thresholds.Observation{JobsInSystem: 1, Data: 5, Reduces: 1}
	if err := s.Commit(t.Context(), "old", Change{Observed: []thresholds.Observation{o}, Log: [][]byte{[]byte("third")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(t.Context(), "old")
	if err != nil {
		t.Fatal(err)
	}
	if got.Estimator.Seen != 5 || got.Estimator.Observations[1] != o || len(got.Log) != 3 || string(got.Log[2]) != "third" {
		t.Errorf("after a change: estimator %+v, log %q", got.Estimator, got.Log)
	}
}

// legacyDamage is a damage to a format-3 directory and whether migration
// must refuse it (else it migrates, all but a torn tail).
type legacyCase struct {
	name   string
	damage func(t *testing.T, dir string)
	refuse string // a word the error must hold ("": migrates)
}

func legacyCases() []legacyCase {
	segment := func(dir string) string { return filepath.Join(dir, legacyWALDir, "0000000000000001.log") }
	rewrite := func(t *testing.T, path string, fn func([]byte) []byte) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, fn(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// recordOffsets lists where the log's records start, and where they end.
	recordOffsets := func(t *testing.T, dir string) []int {
		data, err := os.ReadFile(segment(dir))
		if err != nil {
			t.Fatal(err)
		}
		var offs []int
		for off, lsn := 0, uint64(1); ; lsn++ {
			offs = append(offs, off)
			_, n, ok := legacyRecord(data[off:], lsn)
			if !ok {
				return offs
			}
			off += n
		}
	}
	return []legacyCase{
		{"optd.db truncated to half", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, legacyDBFile), func(d []byte) []byte { return d[:len(d)/2] })
		}, "truncated"},
		{"optd.db truncated to 3 pages", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, legacyDBFile), func(d []byte) []byte { return d[:3*4096] })
		}, "truncated"},
		{"a flipped bit in meta page 0", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, legacyDBFile), func(d []byte) []byte { d[16+50] ^= 4; return d })
		}, "meta page 0"},
		{"a flipped bit in meta page 1", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, legacyDBFile), func(d []byte) []byte { d[4096+16+41] ^= 1; return d })
		}, "meta page 1"},
		{"a renamed key in a job", func(t *testing.T, dir string) {
			db, err := bolt.Open(filepath.Join(dir, legacyDBFile), 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if err := db.Update(func(tx *bolt.Tx) error {
				jobs := tx.Bucket([]byte("clusters")).Bucket([]byte("place-greedy")).Bucket([]byte("jobs"))
				k, v := jobs.Cursor().First()
				return jobs.Put(k, []byte(strings.Replace(string(v), `"maps"`, `"mapz"`, 1)))
			}); err != nil {
				t.Fatal(err)
			}
		}, `unknown field "mapz"`},
		{"a flipped bit in the first log record", func(t *testing.T, dir string) {
			offs := recordOffsets(t, dir)
			rewrite(t, segment(dir), func(d []byte) []byte { d[offs[0]+40] ^= 1; return d })
		}, "a good record follows"},
		{"4 KiB zeroed in the log", func(t *testing.T, dir string) {
			rewrite(t, segment(dir), func(d []byte) []byte { clear(d[:4096]); return d })
		}, "a good record follows"},
		{"a flipped bit in the last log record (a torn write)", func(t *testing.T, dir string) {
			offs := recordOffsets(t, dir)
			last := offs[len(offs)-2]
			rewrite(t, segment(dir), func(d []byte) []byte { d[last+20] ^= 1; return d })
		}, ""},
		{"the log cut within its last record", func(t *testing.T, dir string) {
			offs := recordOffsets(t, dir)
			rewrite(t, segment(dir), func(d []byte) []byte { return d[:offs[len(offs)-1]-7] })
		}, "truncated"},
		{"the last log record half written (a torn write)", func(t *testing.T, dir string) {
			offs := recordOffsets(t, dir)
			last := offs[len(offs)-2]
			rewrite(t, segment(dir), func(d []byte) []byte { clear(d[last+30 : offs[len(offs)-1]]); return d })
		}, ""},
	}
}

// TestMigrationRefusesDamage: a damaged format-3 directory is refused (no
// panic, no fault on the mapped file), with the damage named, and left as
// it was; a torn write at the end of its log is not migrated (it was never
// acknowledged) and the rest is.
func TestMigrationRefusesDamage(t *testing.T) {
	for _, c := range legacyCases() {
		t.Run(c.name, func(t *testing.T) {
			dir, want := format3Dir(t)
			c.damage(t, dir)
			before, err := os.ReadFile(filepath.Join(dir, legacyDBFile))
			if err != nil {
				t.Fatal(err)
			}
			rep, cerr := Check(dir, Options{})
			s, err := Open(dir, 0)
			if c.refuse != "" {
				if err == nil {
					s.Close()
					t.Fatal("Open migrated a damaged directory")
				}
				if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), c.refuse) {
					t.Errorf("Open = %v, want ErrCorrupt saying %q", err, c.refuse)
				}
				if cerr != nil || len(rep.Problems) == 0 {
					t.Errorf("Check = %+v, %v; want the damage reported", rep, cerr)
				}
				after, _ := os.ReadFile(filepath.Join(dir, legacyDBFile))
				if string(after) != string(before) {
					t.Error("the refused optd.db was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if cerr != nil || len(rep.Problems) > 0 || rep.TornTailBytes == 0 {
				t.Errorf("Check = %+v, %v; want healthy with a torn tail", rep, cerr)
			}
			// The torn record was the last change: place-receding-horizon's
			// last placement, or the greedy cluster's last JobFinished.
			lost := 0
			for id, w := range want {
				got, err := s.Load(t.Context(), id)
				if err != nil {
					t.Fatal(err)
				}
				if !sameState(got, w) {
					lost++
				}
			}
			if lost != 1 {
				t.Errorf("%d clusters differ from the format-3 store's state, want 1 (the torn record's)", lost)
			}
		})
	}
}

// TestMigrationResumesAfterACrash: an engine holding part of a migration
// (clusters, no format record) beside the old files is cleared and the
// migration runs again.
func TestMigrationResumesAfterACrash(t *testing.T) {
	dir, want := format3Dir(t)
	if err := os.MkdirAll(filepath.Join(dir, EngineDir), 0o700); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(filepath.Join(dir, EngineDir), &pebble.Options{FormatMajorVersion: pebble.FormatNewest})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	half := &State{Cluster: Cluster{ID: "place-greedy"}, Jobs: []Job{{ID: "stale", Seq: 1}}}
	if err := putState(b, half); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s := open(t, dir)
	defer s.Close()
	if s.Recovered().MigratedFrom != 3 || s.Recovered().GuardRebuilt == "" {
		t.Errorf("Recovered = %+v, want a migration from format 3 (and the guard the crashed attempt never wrote rebuilt)", s.Recovered())
	}
	checkStates(t, s, want)
}

// TestOpenRefusesTwoStores: a store and a format-1 to -3 file that was
// never migrated into it are not mixed.
func TestOpenRefusesTwoStores(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	createCluster(t, s, "c")
	s.Close()
	writeFormat1(t, filepath.Join(dir, legacyDBFile), &State{Cluster: Cluster{ID: "other"}})
	if _, err := Open(dir, 0); err == nil || !strings.Contains(err.Error(), "never migrated") {
		t.Errorf("Open = %v, want a refusal to mix the stores", err)
	}
}

// TestOpenRefusesNewerFormat: a store of a later format is refused with
// ErrFormat naming both versions.
func TestOpenRefusesNewerFormat(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	v, err := encodeJSON(keyFormatRecord, formatRecord{Format: formatVersion + 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.engine.db.Set(keyFormatRecord, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(dir, 0)
	newer, ours := fmt.Sprint("format ", formatVersion+1), fmt.Sprint("up to ", formatVersion)
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), newer) || !strings.Contains(err.Error(), ours) {
		t.Fatalf("Open = %v, want ErrFormat naming %q and %q", err, newer, ours)
	}
}

// appendLegacyRecord appends a format-3 log record, as format 3 wrote it.
func appendLegacyRecord(buf []byte, lsn uint64, payload []byte) []byte {
	var h [16]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[8:], lsn)
	binary.LittleEndian.PutUint32(h[4:], crc32.Update(crc32.Checksum(h[8:16], castagnoli), castagnoli, payload))
	return append(append(buf, h[:]...), payload...)
}

package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// newestLog returns the name of the newest log of an in-memory store.
func newestLog(t *testing.T, fs vfs.FS) string {
	t.Helper()
	names, err := fs.List(fs.PathJoin(memDir, EngineDir))
	if err != nil {
		t.Fatal(err)
	}
	newest := ""
	for _, n := range names {
		if isLogName(n) && n > newest {
			newest = n
		}
	}
	return newest
}

// TestTornTailIsDroppedAndKept: bytes after the last record of the newest
// log that do not form a record (a write the crash cut) are dropped at
// Open, saved under torn-tails, reported by Check and Recovered, and every
// acknowledged change is there.
func TestTornTailIsDroppedAndKept(t *testing.T) {
	for _, tail := range []string{"garbage", "a chunk header"} {
		t.Run(tail, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			s := openMem(t, fs)
			m := newModel("c", 3)
			if err := s.Create(t.Context(), m.cluster, m.estimator()); err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for range 50 {
				ch := m.next(rng)
				m.apply(ch)
				if err := s.Commit(t.Context(), "c", ch); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(20 * witnessDelay)
			img := fs.CrashClone(vfs.CrashCloneCfg{})
			s.Close()

			name := newestLog(t, img)
			path := img.PathJoin(memDir, EngineDir, name)
			data := readMem(t, img, path)
			sc := scanChunks(data, logNumber(name))
			torn := []byte("a write that was cut")
			if tail == "a chunk header" {
				torn = make([]byte, 19+40)
				torn[6] = 9 // a chunk that would say how far the log was synced
				binary.LittleEndian.PutUint16(torn[4:], 40)
				binary.LittleEndian.PutUint32(torn[7:], logNumber(name))
				binary.LittleEndian.PutUint64(torn[11:], uint64(sc.end))
				copy(torn[19:], "half of a batch")
			}
			copy(data[sc.end:], torn)
			writeMem(t, img, path, data, false)
			want := int64(len(bytes.TrimRight(torn, "\x00")))

			rep, err := Check(memDir, memOptions(img))
			if err != nil || len(rep.Problems) > 0 || rep.TornTailBytes != want {
				t.Fatalf("Check = %+v, %v; want healthy with a torn tail of %d bytes", rep, err, want)
			}
			s = openMem(t, img)
			defer s.Close()
			r := s.Recovered()
			if !r.Crash || r.TornTailBytes != want || !strings.Contains(r.TornTailFile, "torn-tails/"+name) {
				t.Errorf("Recovered = %+v", r)
			}
			if saved := readMem(t, img, r.TornTailFile); !bytes.Equal(saved, torn[:want]) {
				t.Errorf("saved tail %q, want %q", saved, torn[:want])
			}
			got, err := s.Load(t.Context(), "c")
			if err != nil || !sameState(got, m.state()) {
				t.Errorf("after dropping the torn tail: %+v, %v", got, err)
			}
		})
	}
}

// TestCheck: Check counts a healthy store, names a damaged record by its
// key, and refuses to run while the store is open.
func TestCheck(t *testing.T) {
	fs := vfs.NewMem()
	s := openMem(t, fs)
	jobs, entries := 0, 0
	for c := range 3 {
		id := fmt.Sprint("c", c)
		createCluster(t, s, id)
		for k := range 10 * (c + 1) {
			ch := Change{Put: []Job{{ID: fmt.Sprint("j", k), Seq: int64(k + 1)}}, Log: [][]byte{[]byte("e")}}
			if err := s.Commit(t.Context(), id, ch); err != nil {
				t.Fatal(err)
			}
			jobs, entries = jobs+1, entries+1
		}
	}
	if _, err := Check(memDir, memOptions(fs)); !errors.Is(err, ErrLocked) {
		t.Errorf("Check of an open store = %v, want ErrLocked", err)
	}
	k := jobKey("c1", "j3")
	v, closer, err := s.engine.db.Get(k)
	if err != nil {
		t.Fatal(err)
	}
	bad := []byte(strings.Replace(string(v), `"reduces"`, `"reducez"`, 1))
	closer.Close()
	s.Close()

	rep, err := Check(memDir, memOptions(fs))
	if err != nil || len(rep.Problems) > 0 || rep.Format != formatVersion || rep.Clusters != 3 || rep.Jobs != jobs || rep.LogEntries != entries {
		t.Fatalf("Check of a healthy store = %+v, %v; want 3 clusters, %d jobs, %d log entries", rep, err, jobs, entries)
	}
	s = openMem(t, fs)
	if err := s.engine.db.Set(k, bad, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rep, err = Check(memDir, memOptions(fs))
	if err != nil || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0].Error(), `K/"c1"/j/"j3"`) ||
		!strings.Contains(rep.Problems[0].Error(), "checksum mismatch") {
		t.Errorf("Check with a renamed field = %+v, %v; want the record named", rep, err)
	}
	if _, err := OpenWith(memDir, memOptions(fs)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `K/"c1"/j/"j3"`) ||
		!strings.Contains(err.Error(), "optd store check") {
		t.Errorf("Open with a renamed field = %v, want a refusal naming the record and what to do", err)
	}
}

// TestFlippedBitInTheLastRecordIsRefused: a store that crashed just after
// acknowledging a change, before any later record vouched for it: one
// flipped bit in that last record is damage (refused), not a torn write,
// though nothing after it says it was synced.
func TestFlippedBitInTheLastRecordIsRefused(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	createCluster(t, s, "c")
	time.Sleep(20 * witnessDelay)
	if err := s.Commit(t.Context(), "c", Change{Put: []Job{{ID: "last", Seq: 1}}, Log: [][]byte{bytes.Repeat([]byte("e"), 200)}}); err != nil {
		t.Fatal(err)
	}
	img := fs.CrashClone(vfs.CrashCloneCfg{}) // before the witness
	s.Close()
	name := newestLog(t, img)
	path := img.PathJoin(memDir, EngineDir, name)
	data := readMem(t, img, path)
	sc := scanChunks(data, logNumber(name))
	if sc.records == 0 {
		t.Fatal("no record in the newest log")
	}
	ends := recordEnds(data, logNumber(name))
	last := ends[len(ends)-2]
	for _, at := range []int{last + 3, last + 30, int(sc.end) - 10} {
		bad := bytes.Clone(data)
		bad[at] ^= 0x20
		fs := img.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
		writeMem(t, fs, path, bad, false)
		if _, err := OpenWith(memDir, memOptions(fs)); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "one flipped bit") {
			t.Errorf("a bit flipped at byte %d of the last record (%d-%d): Open = %v, want a refusal", at, last, sc.end, err)
		}
	}
}

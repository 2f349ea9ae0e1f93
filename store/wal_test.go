package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// holdInLog stops s from checkpointing on its own, so that acknowledged
// changes stay in the log only (until Load or Close flushes them).
func holdInLog(s *Store) { s.cp.interval.Store(int64(time.Hour)) }

// heldStore opens a store in a new directory with cluster "c" and
// checkpoints held (holdInLog), closed when the test ends.
func heldStore(t *testing.T) *Store {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "optd.db"))
	t.Cleanup(func() { s.Close() })
	createCluster(t, s, "c")
	holdInLog(s)
	return s
}

// crashImage copies s's database and log to a new directory: the files a
// SIGKILL would leave at this moment (the copy reads the page cache, where a
// killed process's writes are). The caller makes sure nothing is being
// written meanwhile (no change in flight, checkpoints held).
func crashImage(t *testing.T, s *Store) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "optd.db")
	copyFile(t, s.Path(), dst)
	if err := os.MkdirAll(walDir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	firsts, err := listSegments(walDir(s.Path()))
	if err != nil {
		t.Fatal(err)
	}
	for _, first := range firsts {
		copyFile(t, filepath.Join(walDir(s.Path()), segmentName(first)), filepath.Join(walDir(dst), segmentName(first)))
	}
	return dst
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
}

// putJobs acknowledges n changes to cluster id, each putting job j<k>.
func putJobs(t *testing.T, s *Store, id string, from, n int) {
	t.Helper()
	for k := from; k < from+n; k++ {
		if err := <-s.Enqueue(id, 1, Change{Put: []Job{{ID: fmt.Sprint("j", k), Seq: int64(k + 1)}}, Meta: &Meta{LastSeq: int64(k + 1)}}); err != nil {
			t.Fatal(err)
		}
	}
}

func loadJobs(t *testing.T, path, id string) int {
	t.Helper()
	s := open(t, path)
	defer s.Close()
	st, err := s.Load(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	for k, j := range st.Jobs {
		if j.ID != fmt.Sprint("j", k) {
			t.Fatalf("job %d is %q: not a prefix of the acknowledged changes", k, j.ID)
		}
	}
	if st.Meta.LastSeq != int64(len(st.Jobs)) {
		t.Fatalf("meta says %d jobs, %d stored", st.Meta.LastSeq, len(st.Jobs))
	}
	return len(st.Jobs)
}

// TestCrashKeepsLoggedChanges: changes acknowledged but only in the log
// (no checkpoint yet) are in the database after a crash and reopen; a
// reopened store goes on numbering records after them.
func TestCrashKeepsLoggedChanges(t *testing.T) {
	s := heldStore(t)
	putJobs(t, s, "c", 0, 30)
	if st := s.Stats(); st.Checkpoints != 0 || st.Transactions != 30 {
		t.Fatalf("stats %+v: want 30 logged groups and no checkpoint", st)
	}
	img := crashImage(t, s)
	reopened := open(t, img)
	if n := reopened.Replayed(); n != 30 {
		t.Errorf("Open replayed %d records, want the 30 groups", n)
	}
	reopened.Close()
	if n := loadJobs(t, img, "c"); n != 30 {
		t.Fatalf("%d jobs after the crash, want the 30 acknowledged", n)
	}
	// The image was checkpointed and closed: its log is gone.
	if firsts, _ := listSegments(walDir(img)); len(firsts) != 0 {
		t.Errorf("log segments %v left after a clean close", firsts)
	}
	again := open(t, img)
	if n := again.Replayed(); n != 0 {
		t.Errorf("a cleanly closed store replayed %d records", n)
	}
	again.Close()
	// Reopened, crashed again after more changes: both rounds are there.
	s2 := open(t, img)
	holdInLog(s2)
	putJobs(t, s2, "c", 30, 5)
	img2 := crashImage(t, s2)
	s2.Close()
	if n := loadJobs(t, img2, "c"); n != 35 {
		t.Fatalf("%d jobs after the second crash, want 35", n)
	}
}

// TestTornTailIsDropped: a crash in the middle of writing the last record
// (any prefix of it on disk) loses that record, which was never
// acknowledged, and nothing before it.
func TestTornTailIsDropped(t *testing.T) {
	s := heldStore(t)
	putJobs(t, s, "c", 0, 3)
	img := crashImage(t, s)
	seg := filepath.Join(walDir(img), segmentName(1))
	data, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	// The third record starts after the first two.
	var ends []int
	if _, _, err := decodeRecords(data, 1, func(_ uint64, p []byte) error {
		prev := 0
		if len(ends) > 0 {
			prev = ends[len(ends)-1]
		}
		ends = append(ends, prev+walHeaderSize+len(p))
		return nil
	}); err != nil || len(ends) != 3 {
		t.Fatalf("decoded %d records (%v)", len(ends), err)
	}
	for cut := ends[1]; cut < ends[2]; cut++ {
		torn := filepath.Join(t.TempDir(), "optd.db")
		copyFile(t, img, torn)
		if err := os.MkdirAll(walDir(torn), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(walDir(torn), segmentName(1)), data[:cut], 0o600); err != nil {
			t.Fatal(err)
		}
		if n := loadJobs(t, torn, "c"); n != 2 {
			t.Fatalf("cut at byte %d of %d: %d jobs, want 2", cut, ends[2], n)
		}
	}
	// A flipped bit in the last record's payload: the same.
	flipped := bytes.Clone(data)
	flipped[ends[2]-1] ^= 1
	if err := os.WriteFile(seg, flipped, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := loadJobs(t, img, "c"); n != 2 {
		t.Fatalf("flipped bit in the last record: %d jobs, want 2", n)
	}
}

// TestSegmentsRotateAndAreRemoved: the log moves to new segments as it
// grows, checkpoints remove the segments they cover, and a crash image with
// several segments replays them all in order.
func TestSegmentsRotateAndAreRemoved(t *testing.T) {
	s := heldStore(t)
	s.wal.segmentSize = 512 // set before the committer's first append
	putJobs(t, s, "c", 0, 40)
	firsts, err := listSegments(walDir(s.Path()))
	if err != nil || len(firsts) < 3 {
		t.Fatalf("%d segments (%v), want several", len(firsts), err)
	}
	img := crashImage(t, s)
	if n := loadJobs(t, img, "c"); n != 40 {
		t.Fatalf("%d jobs replayed from %d segments, want 40", n, len(firsts))
	}
	// Load checkpoints; the full segments go, the current one stays.
	if _, err := s.Load(t.Context(), "c"); err != nil {
		t.Fatal(err)
	}
	after, err := listSegments(walDir(s.Path()))
	if err != nil || len(after) != 1 || after[0] != firsts[len(firsts)-1] {
		t.Fatalf("segments after the checkpoint %v (%v), want only the current %x", after, err, firsts[len(firsts)-1])
	}
	if st := s.Stats(); st.Checkpoints != 1 {
		t.Errorf("%d checkpoints, want 1", st.Checkpoints)
	}
}

// TestCorruptLogIsRefused: a damaged record in a segment that is not the
// last, or a log that starts after the records the database holds, is
// corruption (ErrCorrupt), not a torn tail to drop.
func TestCorruptLogIsRefused(t *testing.T) {
	s := heldStore(t)
	s.wal.segmentSize = 256
	putJobs(t, s, "c", 0, 20)
	img := crashImage(t, s)
	firsts, err := listSegments(walDir(img))
	if err != nil || len(firsts) < 3 {
		t.Fatalf("%d segments (%v)", len(firsts), err)
	}
	mid := filepath.Join(walDir(img), segmentName(firsts[1]))
	data, err := os.ReadFile(mid)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 1
	if err := os.WriteFile(mid, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(img, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged middle segment: Open = %v, want ErrCorrupt", err)
	}
	if err := os.Remove(filepath.Join(walDir(img), segmentName(firsts[0]))); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(img, 0); !errors.Is(err, ErrCorrupt) {
		t.Errorf("log missing its first segment: Open = %v, want ErrCorrupt", err)
	}
}

// TestLogWriteFailureFailsTheStore: once the log cannot be written, every
// change fails with that error (none is acknowledged), and a reopened store
// holds exactly the changes acknowledged before.
func TestLogWriteFailureFailsTheStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "optd.db")
	s := open(t, path)
	createCluster(t, s, "c")
	putJobs(t, s, "c", 0, 3)
	s.wal.f.Close() // the next write fails
	for k := range 2 {
		if err := <-s.Enqueue("c", 1, Change{Put: []Job{{ID: fmt.Sprint("x", k)}}}); err == nil {
			t.Fatal("a change was acknowledged after the log failed")
		}
	}
	if err := <-s.Enqueue("c", 2, Change{Put: []Job{{ID: "later"}}}); err == nil || errors.Is(err, ErrAborted) {
		t.Fatalf("a new generation after the failure: %v, want the log's error", err)
	}
	s.Close()
	if n := loadJobs(t, path, "c"); n != 3 {
		t.Fatalf("%d jobs after reopening, want the 3 acknowledged", n)
	}
}

// FuzzDecodeRecords: any bytes decode without panicking into records with
// consecutive LSNs, which encode back to a prefix of the input; the input
// ended cleanly exactly when the rest is zeros (a preallocated segment's
// unwritten space) or nothing.
func FuzzDecodeRecords(f *testing.F) {
	f.Add(appendRecord(appendRecord(nil, 7, []byte(`[{"cluster":"c"}]`)), 8, []byte("[]")), uint64(7))
	f.Add([]byte{1, 0, 0, 0}, uint64(1))
	f.Add(appendRecord(nil, 2, nil), uint64(1))
	f.Add(append(appendRecord(nil, 1, []byte("[]")), make([]byte, 40)...), uint64(1))
	f.Fuzz(func(t *testing.T, data []byte, first uint64) {
		var again []byte
		var count uint64
		next, clean, err := decodeRecords(data, first, func(lsn uint64, p []byte) error {
			if lsn != first+count {
				t.Fatalf("record %d out of sequence (want %d)", lsn, first+count)
			}
			count++
			again = appendRecord(again, lsn, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(data, again) {
			t.Fatal("decoded records do not encode back to a prefix of the input")
		}
		if rest := data[len(again):]; clean != allZero(rest) {
			t.Fatalf("clean = %v with %d of %d bytes decoded, the rest %x", clean, len(again), len(data), rest)
		}
		if next != first+count {
			t.Fatalf("next %d after %d records from %d", next, count, first)
		}
	})
}

// TestPolicyStateIsReplacedAndSurvivesACrash: a change's PolicyState
// replaces the stored one (nil keeps it), and the last acknowledged one is
// what a store reopened after a crash (only the log holds it) or after a
// clean close loads.
func TestPolicyStateIsReplacedAndSurvivesACrash(t *testing.T) {
	s := heldStore(t)
	load := func(s *Store) []byte {
		t.Helper()
		st, err := s.Load(t.Context(), "c")
		if err != nil {
			t.Fatal(err)
		}
		return st.PolicyState
	}
	if got := load(s); got != nil {
		t.Fatalf("a new cluster has policy state %q", got)
	}
	holdInLog(s) // Load checkpointed
	for k, ch := range []Change{
		{PolicyState: []byte(`{"v":1}`)},
		{Meta: &Meta{LastSeq: 1}}, // keeps it
		{PolicyState: []byte(`{"v":2}`), Log: [][]byte{[]byte("e")}},
	} {
		if err := <-s.Enqueue("c", 1, ch); err != nil {
			t.Fatalf("change %d: %v", k, err)
		}
	}
	img := crashImage(t, s)
	reopened := open(t, img)
	if n := reopened.Replayed(); n != 3 {
		t.Errorf("replayed %d records, want 3", n)
	}
	if got := string(load(reopened)); got != `{"v":2}` {
		t.Errorf("after the crash: policy state %q, want the last acknowledged", got)
	}
	reopened.Close()
	again := open(t, img)
	defer again.Close()
	if got := string(load(again)); got != `{"v":2}` {
		t.Errorf("after a clean close: policy state %q", got)
	}
}

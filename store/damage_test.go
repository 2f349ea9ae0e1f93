package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// image is a data directory in memory with the states its clusters must
// hold.
type image struct {
	name   string
	fs     *vfs.MemFS
	states map[string]*State
}

// buildImages writes a store of 6 clusters (jobs, estimator windows, event
// logs, policy states) through enough changes for the engine to have
// flushed tables, updated its manifest and rotated its logs, and returns
// two images of it: after Close, and after a power loss (only synced data)
// once the committer is idle.
func buildImages(t testing.TB, changes int) []image {
	t.Helper()
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	rng := rand.New(rand.NewPCG(5, 5))
	models := make([]*model, 6)
	for i := range models {
		models[i] = newModel(fmt.Sprint("c", i), i%3*3)
		if err := s.Create(t.Context(), models[i].cluster, models[i].estimator()); err != nil {
			t.Fatal(err)
		}
	}
	for k := range changes {
		m := models[k%len(models)]
		ch := m.next(rng)
		m.apply(ch)
		if err := s.Commit(t.Context(), m.cluster.ID, ch); err != nil {
			t.Fatal(err)
		}
	}
	states := map[string]*State{}
	for _, m := range models {
		states[m.cluster.ID] = m.state()
	}
	time.Sleep(20 * witnessDelay) // the witness vouches for the last group
	crashed := fs.CrashClone(vfs.CrashCloneCfg{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return []image{{"closed", fs, states}, {"crashed", crashed, states}}
}

// damage is one way to damage a file.
type damage struct {
	kind string
	// apply changes data (nil: delete the file); it returns false if the
	// damage does not apply to this file.
	apply func(data []byte, rng *rand.Rand) ([]byte, bool)
}

// damages are the damage kinds of the issue: truncation at a random offset
// and at a record boundary, one flipped bit (anywhere, and within the
// records of a log or manifest), 4 KiB zeroed, the file deleted.
func damages(name string) []damage {
	records := func(data []byte) int {
		if isLogName(name) || isManifestName(name) {
			return int(scanChunks(data, logNumber(name)).end)
		}
		return len(data)
	}
	return []damage{
		{"truncate at a random offset", func(d []byte, rng *rand.Rand) ([]byte, bool) {
			if len(d) == 0 {
				return nil, false
			}
			return d[:rng.IntN(len(d))], true
		}},
		{"truncate at a record boundary", func(d []byte, rng *rand.Rand) ([]byte, bool) {
			if !isLogName(name) && !isManifestName(name) || records(d) == 0 {
				return nil, false
			}
			ends := recordEnds(d, logNumber(name))
			return d[:ends[rng.IntN(len(ends))]], true
		}},
		{"flip a bit anywhere", func(d []byte, rng *rand.Rand) ([]byte, bool) {
			if len(d) == 0 {
				return nil, false
			}
			d = slices.Clone(d)
			d[rng.IntN(len(d))] ^= 1 << rng.IntN(8)
			return d, true
		}},
		{"flip a bit in the records", func(d []byte, rng *rand.Rand) ([]byte, bool) {
			n := records(d)
			if n == 0 || n == len(d) && !isLogName(name) && !isManifestName(name) {
				return nil, false
			}
			d = slices.Clone(d)
			d[rng.IntN(n)] ^= 1 << rng.IntN(8)
			return d, true
		}},
		{"zero 4 KiB", func(d []byte, rng *rand.Rand) ([]byte, bool) {
			n := records(d)
			if n == 0 {
				return nil, false
			}
			d = slices.Clone(d)
			off := rng.IntN(n) &^ 4095
			clear(d[off:min(off+4096, len(d))])
			return d, true
		}},
		{"delete", func([]byte, *rand.Rand) ([]byte, bool) { return nil, true }},
	}
}

// logNumber is a log file's number (0 for any other file).
func logNumber(name string) uint32 {
	var n uint32
	fmt.Sscanf(name, "%d.log", &n)
	return n
}

// recordEnds lists the offsets where the records of a log or manifest end.
func recordEnds(data []byte, logNum uint32) []int {
	var ends []int
	for n := 1; ; n++ {
		s := scanChunks(data, logNum)
		if s.records < n {
			break
		}
		// The end of the first n records: scan a prefix that ends there.
		lo, hi := 0, int(s.end)
		for lo < hi {
			mid := (lo + hi) / 2
			if scanChunks(data[:mid], logNum).records >= n {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		ends = append(ends, lo)
		if len(ends) >= 64 {
			break
		}
	}
	return ends
}

// outcome counts what damage led to, per file kind and damage kind.
type outcome struct{ refused, harmless int }

// TestDamageIsRefusedOrHarmless applies every damage kind, several times
// with random offsets, to every file of a data directory (closed, and after
// a power loss) and opens it: Open either refuses with an error that is
// ErrCorrupt and names the file or key, or opens a store that holds exactly
// the acknowledged states. Check agrees with Open on every damaged copy.
// Nothing panics.
func TestDamageIsRefusedOrHarmless(t *testing.T) {
	trials, changes := 3, 1500
	if testing.Short() || raceEnabled {
		trials, changes = 1, 600
	}
	results := map[string]*outcome{}
	for _, img := range buildImages(t, changes) {
		names, err := img.fs.List(img.fs.PathJoin(memDir, EngineDir))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		for _, name := range names {
			path := img.fs.PathJoin(memDir, EngineDir, name)
			orig := readMem(t, img.fs, path)
			for _, d := range damages(name) {
				for trial := range trials {
					rng := rand.New(rand.NewPCG(uint64(trial), uint64(len(name))))
					data, ok := d.apply(orig, rng)
					if !ok {
						continue
					}
					fs := img.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rng})
					writeMem(t, fs, path, data, d.kind == "delete")
					what := fmt.Sprintf("%s: %s %s (trial %d)", img.name, d.kind, name, trial)
					refused := openDamaged(t, fs, img.states, what)
					key := fileKind(name) + ": " + d.kind
					if results[key] == nil {
						results[key] = &outcome{}
					}
					if refused {
						results[key].refused++
					} else {
						results[key].harmless++
					}
				}
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(results)) {
		t.Logf("%-48s refused %3d, harmless (state intact) %3d", k, results[k].refused, results[k].harmless)
	}
}

// openDamaged checks a damaged copy and opens it; it returns whether Open
// refused it.
func openDamaged(t *testing.T, fs vfs.FS, states map[string]*State, what string) (refused bool) {
	t.Helper()
	rep, cerr := Check(memDir, memOptions(fs))
	s, err := OpenWith(memDir, memOptions(fs))
	if err != nil {
		var d *DamageError
		if !errors.As(err, &d) || !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: Open failed without naming the damage: %v", what, err)
		} else if d.File == "" && d.Key == "" {
			t.Errorf("%s: the damage error names no file or key: %v", what, err)
		}
		if cerr == nil && len(rep.Problems) == 0 {
			t.Errorf("%s: Open refused (%v) but Check found nothing", what, err)
		}
		return true
	}
	defer s.Close()
	if cerr != nil || len(rep.Problems) > 0 {
		t.Errorf("%s: Open accepted it but Check reports %v %v", what, cerr, rep.Problems)
	}
	ids, err := s.List()
	if err != nil {
		t.Errorf("%s: List: %v", what, err)
		return false
	}
	if len(ids) != len(states) {
		t.Errorf("%s: opened with %d clusters, want %d", what, len(ids), len(states))
	}
	for id, want := range states {
		got, err := s.Load(t.Context(), id)
		if err != nil {
			t.Errorf("%s: opened, but Load(%s): %v", what, id, err)
			continue
		}
		if !sameState(got, want) {
			t.Errorf("%s: opened with cluster %s silently different: %d jobs, %+v, %d log entries; want %d jobs, %+v, %d log entries (recovered %+v)",
				what, id, len(got.Jobs), got.Meta, len(got.Log), len(want.Jobs), want.Meta, len(want.Log), s.Recovered())
		}
	}
	return false
}

func fileKind(name string) string {
	switch {
	case isLogName(name):
		return "log"
	case isManifestName(name):
		return "manifest"
	case strings.HasSuffix(name, ".sst"):
		return "table"
	case strings.HasPrefix(name, "OPTIONS-"):
		return "options"
	case strings.HasPrefix(name, "marker.manifest"):
		return "manifest marker"
	case strings.HasPrefix(name, "marker."):
		return "format marker"
	}
	return name
}

func readMem(t testing.TB, fs vfs.FS, path string) []byte {
	t.Helper()
	f, err := fs.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// writeMem replaces (or removes) a file, durably.
func writeMem(t testing.TB, fs vfs.FS, path string, data []byte, remove bool) {
	t.Helper()
	if err := fs.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !remove {
		f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		// A copy: the in-memory file system's invariant checks (on under
		// the race detector) scribble over the buffers written.
		if _, err := f.Write(bytes.Clone(data)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := syncDir(fs, fs.PathDir(path)); err != nil {
		t.Fatal(err)
	}
}

var (
	fuzzImageOnce sync.Once
	fuzzImage     image
)

// FuzzDamagedStore damages one byte of one file of a data directory (or
// cuts the file there) and opens it: refused as damage, or the state
// intact; never a panic.
func FuzzDamagedStore(f *testing.F) {
	f.Add(uint8(0), uint32(100), byte(1), false)
	f.Add(uint8(3), uint32(0), byte(0), true)
	f.Fuzz(func(t *testing.T, file uint8, off uint32, xor byte, cut bool) {
		fuzzImageOnce.Do(func() { fuzzImage = buildImages(t, 300)[1] })
		img := fuzzImage
		names, err := img.fs.List(img.fs.PathJoin(memDir, EngineDir))
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		name := names[int(file)%len(names)]
		path := img.fs.PathJoin(memDir, EngineDir, name)
		data := readMem(t, img.fs, path)
		if len(data) == 0 {
			return
		}
		at := int(off) % len(data)
		if cut {
			data = data[:at]
		} else {
			data = slices.Clone(data)
			data[at] ^= xor
		}
		fs := img.fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 100, RNG: rand.New(rand.NewPCG(1, 1))})
		writeMem(t, fs, path, data, false)
		openDamaged(t, fs, img.states, fmt.Sprintf("%s at %d (cut %v, xor %#x)", name, at, cut, xor))
	})
}

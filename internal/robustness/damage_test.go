package robustness

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"

	"github.com/optd/optd/store"
)

// damageKinds are the damages the storage issue measured.
var damageKinds = []string{
	"truncate at a random offset",
	"truncate at a record boundary",
	"flip a bit anywhere",
	"flip a bit in the records",
	"zero 4 KiB",
	"delete the file",
}

// fileKind names an engine file's kind.
func fileKind(name string) string {
	switch {
	case strings.HasSuffix(name, ".log"):
		return "log"
	case strings.HasSuffix(name, ".sst"):
		return "table"
	case strings.HasPrefix(name, "MANIFEST-"):
		return "manifest"
	case strings.HasPrefix(name, "OPTIONS-"):
		return "options"
	case strings.HasPrefix(name, "marker."):
		return "marker"
	}
	return name
}

// recordEnds lists the offsets where the records of an engine log or
// manifest end, as the engine's own readers find them.
func recordEnds(dir, name string) ([]int64, error) {
	var ends []int64
	if strings.HasSuffix(name, ".log") {
		num, err := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			return nil, err
		}
		logs, err := wal.Scan(wal.Dir{FS: vfs.Default, Dirname: dir})
		if err != nil {
			return nil, err
		}
		ll, ok := logs.Get(wal.NumWAL(num))
		if !ok {
			return nil, fmt.Errorf("no log %s", name)
		}
		r := ll.OpenForRead()
		defer r.Close()
		for {
			rec, off, err := r.NextRecord()
			if err != nil {
				if off.Physical > 0 {
					ends = append(ends, off.Physical)
				}
				return ends, nil
			}
			io.Copy(io.Discard, rec)
			if off.Physical > 0 {
				ends = append(ends, off.Physical)
			}
		}
	}
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := record.NewReader(f, 0)
	for {
		rec, err := r.Next()
		if err != nil {
			return ends, nil
		}
		if _, err := io.Copy(io.Discard, rec); err != nil {
			return ends, nil
		}
		ends = append(ends, r.Offset())
	}
}

// damage applies kind to a file of the engine directory of dir (a random
// one, or one of the kind's files) and says what it did; ok is false if the
// kind does not apply to the file.
func damage(dir string, rng *rand.Rand, kind string) (what string, ok bool, err error) {
	edir := filepath.Join(dir, store.EngineDir)
	ents, err := os.ReadDir(edir)
	if err != nil {
		return "", false, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	// Half the trials damage a log, which holds the newest changes (the
	// files are few, but the damage was all to the log).
	var logs []string
	for _, n := range names {
		if fileKind(n) == "log" {
			logs = append(logs, n)
		}
	}
	name := names[rng.IntN(len(names))]
	if len(logs) > 0 && rng.IntN(2) == 0 {
		name = logs[rng.IntN(len(logs))]
	}
	path := filepath.Join(edir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, err
	}
	what = fmt.Sprintf("%s: %s", kind, name)
	// The records of a log or manifest end at its last record; a table or
	// another file is records throughout.
	end := int64(len(data))
	var ends []int64
	if k := fileKind(name); k == "log" || k == "manifest" {
		if ends, err = recordEnds(edir, name); err != nil {
			return "", false, err
		}
		end = 0
		if len(ends) > 0 {
			end = ends[len(ends)-1]
		}
	}
	switch kind {
	case "truncate at a random offset":
		if len(data) == 0 {
			return what, false, nil
		}
		off := rng.IntN(len(data))
		return fmt.Sprintf("%s at byte %d of %d", what, off, len(data)), true, os.Truncate(path, int64(off))
	case "truncate at a record boundary":
		if len(ends) == 0 {
			return what, false, nil
		}
		off := ends[rng.IntN(len(ends))]
		return fmt.Sprintf("%s at byte %d of %d", what, off, len(data)), true, os.Truncate(path, off)
	case "flip a bit anywhere", "flip a bit in the records":
		n := int64(len(data))
		if kind == "flip a bit in the records" {
			n = end
		}
		if n == 0 {
			return what, false, nil
		}
		off, bit := rng.Int64N(n), rng.IntN(8)
		data[off] ^= 1 << bit
		return fmt.Sprintf("%s at byte %d bit %d", what, off, bit), true, os.WriteFile(path, data, 0o600)
	case "zero 4 KiB":
		if end == 0 {
			return what, false, nil
		}
		off := rng.Int64N(end) &^ 4095
		clear(data[off:min(off+4096, int64(len(data)))])
		return fmt.Sprintf("%s at byte %d", what, off), true, os.WriteFile(path, data, 0o600)
	case "delete the file":
		return what, true, os.Remove(path)
	}
	return "", false, fmt.Errorf("unknown damage %q", kind)
}

// copyDir copies the regular files of src into a new directory dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o750)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		return os.WriteFile(to, data, 0o600)
	})
}

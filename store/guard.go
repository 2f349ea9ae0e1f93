package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The guard.
//
// The engine checksums every record it writes, but two kinds of damage
// leave nothing to check: a log or manifest cut short (a truncation at a
// record boundary reads as a clean end) and a log deleted. The guard file
// (guardName in the engine's directory) witnesses both, through a vfs.FS
// that wraps the engine's file system:
//
//   - every log is created at its full size (guard.walSize, 110% of a
//     memtable, as much as the engine itself reserves for a log; zeros
//     until written), durably, before the engine writes to it, and the guard
//     records its name and size ('W') before the engine gets the file: a
//     power loss cannot shorten a file whose size was synced, so a log
//     shorter than its recorded size was truncated;
//   - every sync of a manifest records how many bytes it made durable ('M')
//     before the engine acts on it (deletes the files the new version no
//     longer needs): a manifest whose good records end before that was
//     damaged, even in its last record, which the engine would otherwise
//     take for a torn write and drop, rolling the data back;
//   - the engine's removal of a log or manifest is recorded ('R') before
//     the file is removed: a log recorded, not removed and missing was
//     deleted.
//
// Open checks these (guard.verify) before the engine reads anything, and
// refuses a data directory that fails. The guard costs a sync per log
// created (every memtable's worth of changes) and per manifest update (a
// flush or compaction), never one per change. A guard that is missing or
// damaged itself holds no data: Open rebuilds it from the files present
// and logs that this once it could not check them.
//
// The guard file is allocated at guardSize bytes (zeros until written),
// like the logs, so that its own truncation shows; it holds records from
// its start, each length (2 bytes, LE) ‖ CRC-32C of the rest (4 bytes, LE)
// ‖ kind (1 byte) ‖ size (8 bytes, LE) ‖ file name, and zeros after the
// last. When full, it is rewritten with the live entries only.

const (
	guardName = "OPTD-GUARD"
	guardSize = 64 << 10
)

type guard struct {
	fs      vfs.FS // the engine's file system, unwrapped
	dir     string
	walSize int64
	log     *slog.Logger
	// outOfSpace is told when a log could not be allocated for lack of
	// space (the health monitor turns the store read-only).
	outOfSpace func(error)

	mu        sync.Mutex
	f         vfs.File // open for appending at off
	off       int64
	wals      map[string]int64 // recorded, not removed: created size
	manifests map[string]int64 // recorded, not removed: bytes synced
}

func isLogName(base string) bool      { return strings.HasSuffix(base, ".log") }
func isManifestName(base string) bool { return strings.HasPrefix(base, "MANIFEST-") }

func encodeGuardRecord(kind byte, name string, size int64) []byte {
	body := make([]byte, 0, 9+len(name))
	body = append(body, kind)
	body = binary.LittleEndian.AppendUint64(body, uint64(size))
	body = append(body, name...)
	rec := binary.LittleEndian.AppendUint16(nil, uint16(len(body)))
	rec = binary.LittleEndian.AppendUint32(rec, crc32.Checksum(body, castagnoli))
	return append(rec, body...)
}

// parseGuard replays the guard file's records. A record that fails its
// checksum with nothing but zeros after it is a write that never completed
// (its file operation did not happen, as the record is synced first);
// anything else out of place is damage.
func parseGuard(data []byte) (wals, manifests map[string]int64, damage error) {
	wals, manifests = map[string]int64{}, map[string]int64{}
	if len(data) != guardSize {
		return wals, manifests, &DamageError{File: engineFile(guardName), Offset: int64(len(data)),
			Reason: fmt.Sprintf("the guard file is %d bytes, it is created with %d", len(data), guardSize)}
	}
	for off := 0; off+6 <= len(data); {
		bad := func(reason string) error {
			return &DamageError{File: engineFile(guardName), Offset: int64(off), Reason: reason}
		}
		n := int(binary.LittleEndian.Uint16(data[off:]))
		if n == 0 {
			if !allZero(data[off:]) {
				return wals, manifests, bad("data after the end of the records")
			}
			return wals, manifests, nil
		}
		end := min(off+6+n, len(data))
		body := data[off+6 : end]
		if end-off-6 != n || n < 10 || crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[off+2:]) {
			if allZero(data[end:]) {
				return wals, manifests, nil // torn
			}
			return wals, manifests, bad("a record fails its checksum")
		}
		kind, size, name := body[0], int64(binary.LittleEndian.Uint64(body[1:9])), string(body[9:])
		switch kind {
		case 'W':
			wals[name] = size
		case 'M':
			manifests[name] = size
		case 'R':
			delete(wals, name)
			delete(manifests, name)
		default:
			return wals, manifests, bad(fmt.Sprintf("a record of unknown kind %q", kind))
		}
		off = end
	}
	return wals, manifests, nil
}

// loadGuard reads the guard of dir. exists is false if there is no guard
// file; damage is set if it could not be read back.
func loadGuard(fs vfs.FS, dir string) (g *guard, exists bool, damage error) {
	g = &guard{fs: fs, dir: dir, wals: map[string]int64{}, manifests: map[string]int64{}}
	data, err := readAll(fs, fs.PathJoin(dir, guardName))
	if errors.Is(err, os.ErrNotExist) {
		return g, false, nil
	}
	if err != nil {
		return g, true, err
	}
	g.wals, g.manifests, damage = parseGuard(data)
	return g, true, damage
}

// rebuild makes the guard describe the files present: every log at its
// present size, every manifest up to its last good record.
func (g *guard) rebuild() error {
	names, err := g.fs.List(g.dir)
	if err != nil {
		return err
	}
	g.wals, g.manifests = map[string]int64{}, map[string]int64{}
	for _, name := range names {
		path := g.fs.PathJoin(g.dir, name)
		switch {
		case isLogName(name):
			st, err := g.fs.Stat(path)
			if err != nil {
				return err
			}
			g.wals[name] = st.Size()
		case isManifestName(name):
			data, err := readAll(g.fs, path)
			if err != nil {
				return err
			}
			g.manifests[name] = scanChunks(data, 0).end
		}
	}
	return g.rewrite()
}

// verify checks the files the guard witnesses and returns every problem.
func (g *guard) verify() []error {
	var problems []error
	for _, name := range slices.Sorted(maps.Keys(g.wals)) {
		want := g.wals[name]
		st, err := g.fs.Stat(g.fs.PathJoin(g.dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			problems = append(problems, &DamageError{File: engineFile(name), Offset: -1,
				Reason: "this engine log is missing: it was created and never removed by the engine, and may hold acknowledged changes not yet in a table"})
		case err != nil:
			problems = append(problems, err)
		case st.Size() < want:
			problems = append(problems, &DamageError{File: engineFile(name), Offset: st.Size(),
				Reason: fmt.Sprintf("this engine log was truncated: it is %d bytes, it was created with %d", st.Size(), want)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(g.manifests)) {
		synced := g.manifests[name]
		data, err := readAll(g.fs, g.fs.PathJoin(g.dir, name))
		switch {
		case errors.Is(err, os.ErrNotExist):
			problems = append(problems, &DamageError{File: engineFile(name), Offset: -1,
				Reason: "this engine manifest is missing: it was synced and never removed by the engine"})
			continue
		case err != nil:
			problems = append(problems, err)
			continue
		}
		if s := scanChunks(data, 0); s.end < synced {
			problems = append(problems, &DamageError{File: engineFile(name), Offset: s.end,
				Reason: fmt.Sprintf("this engine manifest is damaged: its first %d bytes were synced, its good records end at byte %d", synced, s.end)})
		}
	}
	return problems
}

// engineFile is an engine file's name relative to the data directory.
func engineFile(name string) string { return EngineDir + "/" + name }

// openForAppend opens the guard file for records after its last.
func (g *guard) openForAppend() error {
	path := g.fs.PathJoin(g.dir, guardName)
	data, err := readAll(g.fs, path)
	if errors.Is(err, os.ErrNotExist) {
		return g.rewrite()
	}
	if err != nil {
		return err
	}
	f, err := g.fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	g.f, g.off = f, 0
	for g.off+6 <= int64(len(data)) {
		n := int64(binary.LittleEndian.Uint16(data[g.off:]))
		if n == 0 || g.off+6+n > int64(len(data)) || crc32.Checksum(data[g.off+6:g.off+6+n], castagnoli) != binary.LittleEndian.Uint32(data[g.off+2:]) {
			break
		}
		g.off += 6 + n
	}
	if !allZero(data[g.off:]) {
		// A torn record: start again with the live entries.
		return g.rewrite()
	}
	return nil
}

// rewrite replaces the guard file with the live entries, atomically.
func (g *guard) rewrite() error {
	var buf []byte
	for _, name := range slices.Sorted(maps.Keys(g.wals)) {
		buf = append(buf, encodeGuardRecord('W', name, g.wals[name])...)
	}
	for _, name := range slices.Sorted(maps.Keys(g.manifests)) {
		buf = append(buf, encodeGuardRecord('M', name, g.manifests[name])...)
	}
	if len(buf) > guardSize {
		return fmt.Errorf("store: the guard's live entries take %d bytes, more than its %d", len(buf), guardSize)
	}
	tmp, path := g.fs.PathJoin(g.dir, guardName+".tmp"), g.fs.PathJoin(g.dir, guardName)
	f, err := g.fs.Create(tmp, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	err = preallocate(f, guardSize)
	if err == nil {
		_, err = f.WriteAt(buf, 0)
	}
	if err := errors.Join(err, f.Sync(), f.Close()); err != nil {
		return err
	}
	if err := g.fs.Rename(tmp, path); err != nil {
		return err
	}
	if err := syncDir(g.fs, g.dir); err != nil {
		return err
	}
	if g.f != nil {
		g.f.Close()
	}
	if g.f, err = g.fs.OpenReadWrite(path, vfs.WriteCategoryUnspecified); err != nil {
		g.f = nil
		return err
	}
	g.off = int64(len(buf))
	return nil
}

// record appends a record and syncs it.
func (g *guard) record(kind byte, name string, size int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch kind {
	case 'W':
		g.wals[name] = size
	case 'M':
		g.manifests[name] = size
	case 'R':
		delete(g.wals, name)
		delete(g.manifests, name)
	}
	rec := encodeGuardRecord(kind, name, size)
	if g.off+int64(len(rec)) > guardSize {
		return g.rewrite()
	}
	if _, err := g.f.WriteAt(rec, g.off); err != nil {
		return fmt.Errorf("store: writing the guard: %w", err)
	}
	if err := g.f.Sync(); err != nil {
		return fmt.Errorf("store: syncing the guard: %w", err)
	}
	g.off += int64(len(rec))
	return nil
}

func (g *guard) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.f == nil {
		return nil
	}
	err := g.f.Close()
	g.f = nil
	return err
}

// guardFS is the engine's file system with the guard's witnesses.
type guardFS struct {
	vfs.FS
	g *guard
}

// tracked returns name's base if it is a log or manifest of the engine's
// directory.
func (fs *guardFS) tracked(name string) (base string, ok bool) {
	if fs.FS.PathDir(name) != fs.g.dir {
		return "", false
	}
	base = fs.FS.PathBase(name)
	return base, isLogName(base) || isManifestName(base)
}

// Create creates a log allocated and recorded (see the file comment) or a
// manifest that records its syncs. A log the engine cannot have is handed
// over as a failedFile, not as an error: the engine cannot unwind a failed
// creation of its next log (it panics with a mutex unlocked), while a log
// that fails its writes makes the next sync fail, which fails the store
// cleanly.
func (fs *guardFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	base, ok := fs.tracked(name)
	if !ok {
		return fs.FS.Create(name, category)
	}
	f, err := fs.FS.Create(name, category)
	if err != nil {
		if isLogName(base) {
			return failedFile{fmt.Errorf("store: creating the engine log %s: %w", base, err)}, nil
		}
		return nil, err
	}
	if isManifestName(base) {
		return &manifestFile{File: f, g: fs.g, name: base}, nil
	}
	if err := fs.allocate(f, base); err != nil {
		f.Close()
		return failedFile{err}, nil
	}
	return f, nil
}

// allocate allocates a new log, makes its size and name durable and
// records it.
func (fs *guardFS) allocate(f vfs.File, base string) error {
	size := fs.g.walSize
	if err := preallocate(f, size); err != nil {
		if !isNoSpace(err) {
			return fmt.Errorf("store: allocating the engine log %s: %w", base, err)
		}
		// No room for the whole log: it grows with its writes, and a
		// truncation of it cannot be detected; the store is read-only
		// until space is freed.
		fs.g.outOfSpace(err)
		size = 0
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("store: allocating the engine log %s: %w", base, err)
	}
	if err := syncDir(fs.FS, fs.g.dir); err != nil {
		return fmt.Errorf("store: allocating the engine log %s: %w", base, err)
	}
	return fs.g.record('W', base, size)
}

// failedFile is a log the engine could not get: every write and sync on it
// fails (Stat answers, empty: the engine stats a log it just got, and a
// failure there would panic it the same way).
type failedFile struct{ err error }

type emptyFileInfo struct{}

func (emptyFileInfo) Name() string           { return "" }
func (emptyFileInfo) Size() int64            { return 0 }
func (emptyFileInfo) Mode() os.FileMode      { return 0o600 }
func (emptyFileInfo) ModTime() time.Time     { return time.Time{} }
func (emptyFileInfo) IsDir() bool            { return false }
func (emptyFileInfo) Sys() any               { return nil }
func (emptyFileInfo) DeviceID() vfs.DeviceID { return vfs.DeviceID{} }

func (f failedFile) Close() error                       { return nil }
func (f failedFile) Read([]byte) (int, error)           { return 0, f.err }
func (f failedFile) ReadAt([]byte, int64) (int, error)  { return 0, f.err }
func (f failedFile) Write([]byte) (int, error)          { return 0, f.err }
func (f failedFile) WriteAt([]byte, int64) (int, error) { return 0, f.err }
func (f failedFile) Preallocate(int64, int64) error     { return f.err }
func (f failedFile) Stat() (vfs.FileInfo, error)        { return emptyFileInfo{}, nil }
func (f failedFile) Sync() error                        { return f.err }
func (f failedFile) SyncTo(int64) (bool, error)         { return false, f.err }
func (f failedFile) SyncData() error                    { return f.err }
func (f failedFile) Prefetch(int64, int64) error        { return nil }
func (f failedFile) Fd() uintptr                        { return vfs.InvalidFd }

func (fs *guardFS) Remove(name string) error {
	if base, ok := fs.tracked(name); ok {
		if err := fs.g.record('R', base, 0); err != nil {
			return err
		}
	}
	return fs.FS.Remove(name)
}

// ReuseForWrite creates a new log instead of recycling an old one, so that
// every log is allocated and recorded the same way (and holds no stale
// records after its end).
func (fs *guardFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if _, ok := fs.tracked(newname); !ok {
		return fs.FS.ReuseForWrite(oldname, newname, category)
	}
	if err := fs.Remove(oldname); err != nil {
		return nil, err
	}
	return fs.Create(newname, category)
}

// manifestFile records the bytes each sync makes durable.
type manifestFile struct {
	vfs.File
	g       *guard
	name    string
	written atomic.Int64
}

func (f *manifestFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	f.written.Add(int64(n))
	return n, err
}

func (f *manifestFile) Sync() error {
	if err := f.File.Sync(); err != nil {
		return err
	}
	return f.g.record('M', f.name, f.written.Load())
}

func (f *manifestFile) SyncData() error { return f.Sync() }

func syncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

func readAll(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// writeZeros writes size zero bytes at the start of f.
func writeZeros(f vfs.File, size int64) error {
	zeros := make([]byte, min(size, 1<<20))
	for off := int64(0); off < size; {
		n := min(int64(len(zeros)), size-off)
		if _, err := f.WriteAt(zeros[:n], off); err != nil {
			return err
		}
		off += n
	}
	return nil
}

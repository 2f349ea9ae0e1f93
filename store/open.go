package store

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// EngineDir is the engine's directory inside the data directory.
const EngineDir = "state"

// formatVersion is the data format this optd writes: 4, Pebble (formats 1
// to 3 were bbolt, and 3 added a write-ahead log; see legacy.go).
const formatVersion = 4

// DefaultMinFreeBytes is the free space below which the store turns
// read-only (see health.go): room for the engine to flush its memtables and
// finish a compaction of a store of live cluster state.
const DefaultMinFreeBytes = 64 << 20

// Options configures OpenWith. Zero values take the defaults.
type Options struct {
	// LockTimeout is how long Open waits for another process's lock on the
	// data directory before it returns ErrLocked.
	LockTimeout time.Duration
	// Logger receives what Open recovered and the store's warnings (nil:
	// discarded).
	Logger *slog.Logger
	// MinFreeBytes is the free space below which the store is read-only
	// (0: DefaultMinFreeBytes; negative: never).
	MinFreeBytes int64
	// CheckInterval is how often the free space is checked (0: 1 s).
	CheckInterval time.Duration
	// FS is the file system (nil: the operating system's); tests use
	// in-memory and fault-injecting ones.
	FS vfs.FS

	// memTableSize is the engine's memtable size, which is also the size
	// its logs are allocated with (0: 4 MiB; tests make it smaller).
	memTableSize int64
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MinFreeBytes == 0 {
		o.MinFreeBytes = DefaultMinFreeBytes
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = time.Second
	}
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.memTableSize <= 0 {
		o.memTableSize = 4 << 20
	}
	return o
}

// Recovery is what Open found and did.
type Recovery struct {
	// Crash: the store was not closed by the last process that opened it;
	// the engine recovered from its log.
	Crash bool
	// TornTailBytes is the size of the incomplete write at the end of the
	// engine's newest log that recovery dropped (never acknowledged: its
	// sync had not completed); TornTailFile is where its bytes were saved.
	TornTailBytes int64
	TornTailFile  string
	// MigratedFrom is the format of the data directory Open migrated (0:
	// none).
	MigratedFrom int
	// GuardRebuilt says why the guard file was rebuilt ("": it was not).
	GuardRebuilt string
}

// Open opens (creating if needed) the store in data directory dir, waiting
// at most lockTimeout for another process's lock. See OpenWith.
func Open(dir string, lockTimeout time.Duration) (*Store, error) {
	return OpenWith(dir, Options{LockTimeout: lockTimeout})
}

// OpenWith opens (creating if needed) the store in data directory dir: the
// engine in dir/state, a format-1 to -3 store (dir/optd.db and its log)
// migrated first. It verifies everything before it returns: the guard's
// witnesses, the engine's logs, every block of every table and every
// record; on damage it returns an error (errors.Is ErrCorrupt) that names
// the file, offset or key, and changes nothing. The one thing it repairs is
// a torn write at the end of the newest log, which was never acknowledged:
// it is dropped, saved beside the data and logged.
func OpenWith(dir string, o Options) (*Store, error) {
	o = o.withDefaults()
	fs := o.FS
	engineDir := fs.PathJoin(dir, EngineDir)
	if err := mkdirAllDurable(fs, engineDir); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	lock, err := lockDir(fs, engineDir, o.LockTimeout)
	if err != nil {
		return nil, err
	}
	s, err := openStore(dir, engineDir, lock, o)
	if err != nil {
		var d *DamageError
		if errors.As(err, &d) {
			return nil, fmt.Errorf("%w; optd refuses to open %s and changed nothing in it: restore the data directory from a backup, "+
				"or move it aside to start with an empty one (`optd store check --data-dir %s` lists the damage)", err, dir, dir)
		}
		return nil, err
	}
	return s, nil
}

// mkdirAllDurable creates dir and its missing parents (mode 0o750) and
// syncs the directories that got a new entry, so that a power loss cannot
// take the new directories away.
func mkdirAllDurable(fs vfs.FS, dir string) error {
	var created []string
	for d := dir; ; d = fs.PathDir(d) {
		if _, err := fs.Stat(d); err == nil {
			break
		}
		created = append(created, d)
		if fs.PathDir(d) == d {
			break
		}
	}
	if err := fs.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	for _, d := range created {
		if err := syncDir(fs, fs.PathDir(d)); err != nil {
			return err
		}
	}
	return nil
}

// lockDir takes the engine's directory lock, retrying until timeout.
func lockDir(fs vfs.FS, dir string, timeout time.Duration) (*pebble.Lock, error) {
	deadline := time.Now().Add(timeout)
	for {
		lock, err := pebble.LockDirectory(dir, fs)
		if err == nil {
			return lock, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %s (%v)", ErrLocked, dir, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func openStore(dir, engineDir string, lock *pebble.Lock, o Options) (*Store, error) {
	fs := o.FS
	s := &Store{dir: dir}
	s.health = newHealthMonitor(fs, engineDir, o.MinFreeBytes, o.Logger)
	desc, err := pebble.Peek(engineDir, fs)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	g, err := openGuard(fs, engineDir, desc.Exists, o, &s.recovered)
	if err != nil {
		lock.Close()
		return nil, err
	}
	g.walSize = o.memTableSize + o.memTableSize/10
	g.outOfSpace = s.health.engineOutOfSpace
	e := &engine{dir: engineDir, fs: &guardFS{FS: fs, g: g}, guard: g, lock: lock, log: o.Logger, health: s.health}
	torn, problems := inspectLogs(fs, engineDir, g)
	if len(problems) > 0 {
		e.close()
		return nil, problems[0]
	}
	if torn != nil {
		saved, err := saveTail(fs, dir, torn)
		if err != nil {
			e.close()
			return nil, err
		}
		s.recovered.TornTailBytes, s.recovered.TornTailFile = int64(len(torn.data)), saved
		o.Logger.Warn("store: dropping the torn write at the end of the engine's newest log: it was never completed, so never acknowledged",
			"file", fs.PathJoin(engineDir, torn.log), "offset", torn.offset, "bytes", len(torn.data), "good_records", torn.records, "saved_to", saved)
	}
	if err := e.open(o, desc.Exists || len(g.manifests) > 0); err != nil {
		e.close()
		return nil, err
	}
	s.engine = e
	ok := false
	defer func() {
		if !ok {
			e.close()
		}
	}()
	if err := e.validateTables(); err != nil {
		return nil, err
	}
	if err := s.initFormat(o); err != nil {
		return nil, err
	}
	index, err := verifyAll(e.db)
	if err != nil {
		return nil, err
	}
	s.health.start(o.CheckInterval)
	s.group = newCommitter(e, s.health, index, &s.observer)
	s.oneOffGen.Store(1 << 63)
	ok = true
	return s, nil
}

// openGuard loads the guard and checks what it witnesses; a missing or
// damaged guard of an existing engine is rebuilt (and the check skipped).
func openGuard(fs vfs.FS, engineDir string, exists bool, o Options, rec *Recovery) (*guard, error) {
	g, found, damage := loadGuard(fs, engineDir)
	g.log = o.Logger
	switch {
	case found && damage == nil:
		if problems := g.verify(); len(problems) > 0 {
			return nil, problems[0]
		}
		if err := g.openForAppend(); err != nil {
			return nil, fmt.Errorf("store: opening the guard: %w", err)
		}
		return g, nil
	case !found && !exists:
		// A new store.
		return g, g.rewrite()
	case !found:
		rec.GuardRebuilt = "the guard file was missing"
	default:
		if !errors.Is(damage, ErrCorrupt) {
			return nil, fmt.Errorf("store: reading the guard: %w", damage)
		}
		rec.GuardRebuilt = damage.Error()
	}
	o.Logger.Warn("store: rebuilding the guard from the engine's files; this time, a truncated engine log or manifest could not be detected",
		"reason", rec.GuardRebuilt, "file", fs.PathJoin(engineDir, guardName))
	return g, g.rebuild()
}

// tornTail is a torn write at the end of the newest log.
type tornTail struct {
	log     string
	offset  int64
	data    []byte
	records int
}

// inspectLogs reads the engine's live logs before the engine does: a log
// that is not the newest must end cleanly, and the newest may end in a torn
// write (returned), unless a later chunk proves the damaged bytes had been
// synced. It returns every problem.
func inspectLogs(fs vfs.FS, engineDir string, g *guard) (*tornTail, []error) {
	names, err := fs.List(engineDir)
	if err != nil {
		return nil, []error{fmt.Errorf("store: %w", err)}
	}
	type wal struct {
		name string
		num  uint64
	}
	var wals []wal
	for _, name := range names {
		if _, ok := g.wals[name]; !ok || !isLogName(name) {
			continue // not live: the engine ignores or removes it
		}
		num, err := strconv.ParseUint(strings.TrimSuffix(name, ".log"), 10, 64)
		if err != nil {
			continue
		}
		wals = append(wals, wal{name, num})
	}
	slices.SortFunc(wals, func(a, b wal) int { return cmp.Compare(a.num, b.num) })
	var torn *tornTail
	var problems []error
	for i, w := range wals {
		data, err := readAll(fs, fs.PathJoin(engineDir, w.name))
		if err != nil {
			problems = append(problems, fmt.Errorf("store: reading %s: %w", w.name, err))
			continue
		}
		sc := scanChunks(data, uint32(w.num))
		newest := i == len(wals)-1
		switch {
		case sc.provenBad:
			problems = append(problems, &DamageError{File: engineFile(w.name), Offset: sc.stop,
				Reason: fmt.Sprintf("this engine log is damaged at byte %d after %d good records, and a later record shows it had been synced: acknowledged changes are in the damaged bytes", sc.stop, sc.records)})
		case sc.bitFlip:
			problems = append(problems, &DamageError{File: engineFile(w.name), Offset: sc.stop,
				Reason: fmt.Sprintf("this engine log is damaged at byte %d after %d good records: one flipped bit, which a write cut short by a crash does not leave (it leaves whole sectors unwritten), so the record was written and may have been acknowledged", sc.stop, sc.records)})
		case sc.tail > 0 && !newest:
			problems = append(problems, &DamageError{File: engineFile(w.name), Offset: sc.stop,
				Reason: fmt.Sprintf("this engine log is damaged at byte %d after %d good records; it is not the newest log, so it was complete", sc.stop, sc.records)})
		case sc.tail > 0:
			torn = &tornTail{log: w.name, offset: sc.end, data: data[sc.end : sc.end+sc.tail], records: sc.records}
		}
	}
	return torn, problems
}

// saveTail keeps a torn tail's bytes beside the engine, for inspection.
func saveTail(fs vfs.FS, dir string, t *tornTail) (string, error) {
	tdir := fs.PathJoin(dir, "torn-tails")
	if err := fs.MkdirAll(tdir, 0o750); err != nil {
		return "", fmt.Errorf("store: saving a torn tail: %w", err)
	}
	path := fs.PathJoin(tdir, fmt.Sprintf("%s.%d.at-%d", t.log, time.Now().Unix(), t.offset))
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return "", fmt.Errorf("store: saving a torn tail: %w", err)
	}
	_, werr := f.Write(t.data)
	if err := errors.Join(werr, f.Sync(), f.Close(), syncDir(fs, tdir)); err != nil {
		return "", fmt.Errorf("store: saving a torn tail: %w", err)
	}
	return path, nil
}

// formatRecord is the record under key F.
type formatRecord struct {
	Format int `json:"format"`
	// MigratedFrom is the format the data was migrated from (0: created
	// in this format).
	MigratedFrom int `json:"migrated_from,omitempty"`
}

// initFormat reads the format record (writing it in a new store, after
// migrating a format-1 to -3 directory if there is one) and the clean
// shutdown record.
func (s *Store) initFormat(o Options) error {
	db := s.engine.db
	v, closer, err := db.Get(keyFormatRecord)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		empty, err := s.engine.empty()
		if err != nil {
			return err
		}
		legacy, err := hasLegacy(o.FS, s.dir)
		if err != nil {
			return err
		}
		switch {
		case legacy:
			from, err := migrateLegacy(s.engine, o.FS, s.dir, o.Logger, o.LockTimeout)
			if err != nil {
				return err
			}
			s.recovered.MigratedFrom = from
		case !empty:
			return &DamageError{Key: describeKey(keyFormatRecord), Reason: "the format record is missing from a store that holds data"}
		default:
			if err := s.engine.writeFormat(0); err != nil {
				return err
			}
		}
	case err != nil:
		return s.engine.readError(err)
	default:
		var f formatRecord
		err := decodeJSON(keyFormatRecord, v, &f)
		closer.Close()
		if err != nil {
			return err
		}
		if f.Format > formatVersion {
			return fmt.Errorf("%w: the data directory is format %d, this optd reads formats up to %d (upgrade optd)", ErrFormat, f.Format, formatVersion)
		}
		if f.Format < formatVersion {
			return &DamageError{Key: describeKey(keyFormatRecord), Reason: fmt.Sprintf("format %d in an engine store (format %d)", f.Format, formatVersion)}
		}
		// A crash in a migration that had written its format record but
		// not yet moved the old files aside.
		if err := finishMigration(o.FS, s.dir, f.MigratedFrom, o.Logger); err != nil {
			return err
		}
	}
	// The clean-shutdown record: Close writes it, Open removes it.
	_, closer, err = db.Get(keyShutdown)
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		s.recovered.Crash = s.recovered.MigratedFrom == 0 && !s.engine.fresh
		return nil
	case err != nil:
		return s.engine.readError(err)
	}
	closer.Close()
	return db.Delete(keyShutdown, pebble.Sync)
}

// Close closes the store: queued changes are written first, then a
// clean-shutdown record; Enqueue after Close answers ErrClosed.
func (s *Store) Close() error {
	s.group.close()
	s.health.close()
	var err error
	if s.health.failure() == nil {
		k := keyShutdown
		if err = s.engine.db.Set(k, sealRecord(k, []byte(time.Now().UTC().Format(time.RFC3339))), pebble.Sync); err != nil {
			err = fmt.Errorf("store: writing the clean-shutdown record: %w", err)
		}
	}
	return errors.Join(err, s.engine.close())
}

// hasLegacy reports whether dir holds a format-1 to -3 store.
func hasLegacy(fs vfs.FS, dir string) (bool, error) {
	_, err := fs.Stat(fs.PathJoin(dir, legacyDBFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
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

// engine is the open Pebble database and its guard.
type engine struct {
	dir    string
	fs     *guardFS
	guard  *guard
	lock   *pebble.Lock
	db     *pebble.DB
	opts   *pebble.Options
	log    *slog.Logger
	health *healthMonitor
	// fresh: the engine was created by this Open.
	fresh bool
	// committerG is the id of the goroutine that commits (the committer's,
	// found once) and committing is set while it does, so that the
	// engine's fatal errors on it can be recovered (Fatalf).
	committerG atomic.Uint64
	committing atomic.Bool
	// fatal: the engine reported a fatal error; it is not closed then
	// (its state is unknown and closing may block).
	fatal atomic.Bool
}

func (e *engine) open(o Options, exists bool) error {
	cache := pebble.NewCache(8 << 20)
	defer cache.Unref()
	e.opts = &pebble.Options{
		FS:                 e.fs,
		Lock:               e.lock,
		Cache:              cache,
		Logger:             pebbleLogger{e},
		FormatMajorVersion: pebble.FormatNewest,
		MemTableSize:       uint64(o.memTableSize),
		ErrorIfNotExists:   exists,
		EventListener: &pebble.EventListener{
			BackgroundError: e.backgroundError,
			DataCorruption: func(info pebble.DataCorruptionInfo) {
				e.health.fail(&DamageError{File: info.Path, Offset: -1, Reason: fmt.Sprint(info.Details)})
			},
			DiskSlow: func(info pebble.DiskSlowInfo) {
				e.log.Warn("store: slow disk", "info", info.String())
			},
		},
	}
	e.opts.EnsureDefaults()
	db, err := pebble.Open(e.dir, e.opts)
	if err != nil {
		if exists {
			return openDamage(err)
		}
		return fmt.Errorf("store: creating the engine in %s: %w", e.dir, err)
	}
	e.db, e.fresh = db, !exists
	if e.fresh {
		// The engine writes its very first log before it knows its format
		// version, in the older chunk format that does not say how far the
		// log was synced; a flush moves on to a log that does.
		if err := db.Flush(); err != nil {
			db.Close()
			e.db = nil
			return fmt.Errorf("store: creating the engine in %s: %w", e.dir, err)
		}
	}
	return nil
}

// engineFileName finds the name of an engine file in an engine error.
var engineFileName = regexp.MustCompile(`\b(\d{6}\.(sst|log|blob)|MANIFEST-\d+|OPTIONS-\d+|marker\.[\w.-]+)\b`)

// openDamage turns the engine's refusal to open an existing store into the
// damage it found (naming the file when the engine does), unless it is an
// access error.
func openDamage(err error) error {
	if errors.Is(err, os.ErrPermission) {
		return fmt.Errorf("store: opening the engine: %w", err)
	}
	d := &DamageError{File: EngineDir, Offset: -1, Reason: "the engine cannot open it: " + err.Error()}
	switch {
	case errors.Is(err, pebble.ErrDBDoesNotExist):
		d.Reason = "the engine's manifest marker is missing, though the guard shows the engine had written a manifest"
	case errors.Is(err, pebble.ErrDBNotPristine):
		d.Reason = "the engine's format-version marker is missing, though the engine holds files (" + err.Error() + ")"
	}
	if m := engineFileName.FindString(err.Error()); m != "" {
		d.File = engineFile(m)
	}
	return d
}

// backgroundError handles an error of the engine's flushes and
// compactions, which it retries: lack of space makes the store read-only.
func (e *engine) backgroundError(err error) {
	if isNoSpace(err) {
		e.health.engineOutOfSpace(err)
		return
	}
	e.log.Warn("store: engine background error (retried)", "err", err)
}

// close closes the engine, unless it failed fatally (then it stays open,
// with the directory's lock, until the process exits).
func (e *engine) close() error {
	if e.fatal.Load() {
		return nil
	}
	var err error
	if e.db != nil {
		err = e.db.Close()
	}
	return errors.Join(err, e.guard.close(), e.lock.Close())
}

// empty reports whether the engine holds no key.
func (e *engine) empty() (bool, error) {
	it, err := e.db.NewIter(nil)
	if err != nil {
		return false, err
	}
	ok := it.First()
	return !ok, errors.Join(it.Error(), it.Close())
}

func (e *engine) writeFormat(from int) error {
	v, err := encodeJSON(keyFormatRecord, formatRecord{Format: formatVersion, MigratedFrom: from})
	if err != nil {
		return err
	}
	return e.db.Set(keyFormatRecord, v, pebble.Sync)
}

// validateTables checks the checksum of every block of every table.
func (e *engine) validateTables() error {
	levels, err := e.db.SSTables()
	if err != nil {
		return e.readError(err)
	}
	ropts := e.opts.MakeReaderOptions()
	for _, level := range levels {
		for _, t := range level {
			name := fmt.Sprintf("%06d.sst", uint64(t.FileNum))
			if err := validateTable(e.fs, e.fs.PathJoin(e.dir, name), ropts); err != nil {
				return &DamageError{File: engineFile(name), Offset: -1, Reason: err.Error()}
			}
		}
	}
	return nil
}

func validateTable(fs vfs.FS, path string, ropts sstable.ReaderOptions) error {
	f, err := fs.Open(path)
	if err != nil {
		return err
	}
	readable, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return err
	}
	r, err := sstable.NewReader(context.Background(), readable, ropts)
	if err != nil {
		readable.Close()
		return err
	}
	return errors.Join(r.ValidateBlockChecksums(), r.Close())
}

// applyNoSyncWait hands b to the engine's log. The engine treats a failed
// write as fatal (it panics or calls Fatalf on the committing goroutine);
// that is recovered here into an error.
func (e *engine) applyNoSyncWait(b *pebble.Batch) (err error) {
	if e.committerG.Load() == 0 {
		e.committerG.Store(goroutineID()) // always the committer's
	}
	e.committing.Store(true)
	defer func() {
		e.committing.Store(false)
		if r := recover(); r != nil {
			e.fatal.Store(true)
			err = fmt.Errorf("the engine failed writing its log: %v", r)
		}
	}()
	return e.db.ApplyNoSyncWait(b, pebble.Sync)
}

// readError turns an engine read error into the store's: a corruption
// fails the store (a damaged block is refused, not served around).
func (e *engine) readError(err error) error {
	if err == nil {
		return nil
	}
	var d *DamageError
	if errors.As(err, &d) || pebble.IsCorruptionError(err) {
		if d == nil {
			d = &DamageError{Offset: -1, Reason: err.Error()}
		}
		e.health.fail(d)
		return d
	}
	return fmt.Errorf("store: reading: %w", err)
}

// pebbleLogger routes the engine's messages to the store's log. Fatalf
// fails the store: on the committer goroutine it panics, which
// applyNoSyncWait recovers; elsewhere (a flush or compaction) it returns,
// and the engine, whose state is then unknown, is never used again.
type pebbleLogger struct{ e *engine }

func (l pebbleLogger) Infof(format string, args ...any) {
	l.e.log.Debug("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Errorf(format string, args ...any) {
	l.e.log.Warn("pebble: " + fmt.Sprintf(format, args...))
}

func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.e.fatal.Store(true)
	l.e.health.fail(fmt.Errorf("the storage engine failed: %s", msg))
	if l.e.committing.Load() && l.e.committerG.Load() == goroutineID() {
		panic(msg)
	}
}

// goroutineID is the calling goroutine's id, parsed from its stack header
// ("goroutine 7 [running]:").
func goroutineID() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	id, _ := strconv.ParseUint(string(b[:max(bytes.IndexByte(b, ' '), 0)]), 10, 64)
	return id
}

// hasLegacy reports whether dir holds a format-1 to -3 store.
func hasLegacy(fs vfs.FS, dir string) (bool, error) {
	_, err := fs.Stat(fs.PathJoin(dir, legacyDBFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

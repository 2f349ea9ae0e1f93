package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The engine: Pebble, configured for the store, and what the store does
// around it: its fatal errors turned into a failed store, its corruption
// errors into damage, every table's blocks checked at Open.

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

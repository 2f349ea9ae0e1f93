package store

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// CheckReport is what Check found.
type CheckReport struct {
	// Format is the data directory's format (0: empty; 1 to 3: a bbolt
	// store Open would migrate; 4: the engine).
	Format int
	// Clusters, Jobs and LogEntries count what the store holds.
	Clusters, Jobs, LogEntries int
	// Tables is the number of the engine's tables; DiskBytes the space the
	// engine uses.
	Tables    int
	DiskBytes uint64
	// TornTailBytes is the size of a torn write at the end of the newest
	// log, which the next Open drops (never acknowledged).
	TornTailBytes int64
	// Warnings are conditions that hide no damage (a guard to rebuild).
	Warnings []string
	// Problems lists the damage found (empty: the data directory is
	// healthy). Each is a *DamageError (errors.Is ErrCorrupt) or an error
	// reading a file.
	Problems []error
}

// Check verifies the data directory dir offline, changing nothing in it:
// the guard's witnesses, every engine log, the engine's manifest, every
// block of every table, the consistency of the engine's levels, every
// record and the fit of each cluster's records; or, for a format-1 to -3
// directory, bbolt's meta pages and check, every value and the log that
// Open would migrate. It fails (ErrLocked) while a server has the directory
// open. o's LockTimeout and FS apply.
func Check(dir string, o Options) (*CheckReport, error) {
	o = o.withDefaults()
	fs := o.FS
	engineDir := fs.PathJoin(dir, EngineDir)
	r := &CheckReport{}
	if _, err := fs.Stat(engineDir); err != nil {
		legacy, lerr := hasLegacy(fs, dir)
		if lerr != nil || !legacy {
			return r, errors.Join(lerr, fmt.Errorf("store: %s holds no store (%w)", dir, err))
		}
		return r, checkLegacy(dir, o, r)
	}
	lock, err := lockDir(fs, engineDir, o.LockTimeout)
	if err != nil {
		return r, err
	}
	defer lock.Close()
	desc, err := pebble.Peek(engineDir, fs)
	if err != nil {
		return r, fmt.Errorf("store: %w", err)
	}
	g, found, damage := loadGuard(fs, engineDir)
	switch {
	case !found && desc.Exists:
		r.Warnings = append(r.Warnings, "the guard file is missing (Open rebuilds it; until then a truncated engine log or manifest cannot be detected)")
	case damage != nil:
		r.Warnings = append(r.Warnings, fmt.Sprintf("the guard file is damaged (Open rebuilds it; until then a truncated engine log or manifest cannot be detected): %v", damage))
	case found:
		r.Problems = append(r.Problems, g.verify()...)
	}
	if !found || damage != nil {
		// Check the logs the engine would replay without the guard's list.
		names, err := fs.List(engineDir)
		if err != nil {
			return r, err
		}
		for _, name := range names {
			if isLogName(name) {
				g.wals[name] = 0
			}
		}
	}
	torn, problems := inspectLogs(fs, engineDir, g)
	r.Problems = append(r.Problems, problems...)
	if torn != nil {
		r.TornTailBytes = int64(len(torn.data))
	}
	if !desc.Exists {
		if len(g.manifests) > 0 {
			r.Problems = append(r.Problems, openDamage(pebble.ErrDBDoesNotExist))
			return r, nil
		}
		if legacy, _ := hasLegacy(fs, dir); legacy {
			return r, checkLegacy(dir, o, r)
		}
		return r, nil
	}
	if len(r.Problems) > 0 {
		return r, nil // the engine would refuse, or misread, the damaged files
	}
	r.Format = formatVersion
	health := newHealthMonitor(fs, engineDir, -1, o.Logger)
	e := &engine{dir: engineDir, guard: g, log: o.Logger, health: health}
	cache := pebble.NewCache(8 << 20)
	defer cache.Unref()
	e.opts = &pebble.Options{FS: fs, Lock: lock, Cache: cache, ReadOnly: true, ErrorIfNotExists: true, Logger: pebbleLogger{e},
		EventListener: &pebble.EventListener{DataCorruption: func(info pebble.DataCorruptionInfo) {
			r.Problems = append(r.Problems, &DamageError{File: info.Path, Offset: -1, Reason: fmt.Sprint(info.Details)})
		}}}
	e.opts.EnsureDefaults()
	db, err := pebble.Open(engineDir, e.opts)
	if err != nil {
		r.Problems = append(r.Problems, openDamage(err))
		return r, nil
	}
	defer db.Close()
	e.db = db
	r.DiskBytes = db.Metrics().DiskSpaceUsage()
	levels, err := db.SSTables()
	if err != nil {
		return r, err
	}
	ropts := e.opts.MakeReaderOptions()
	for _, level := range levels {
		for _, t := range level {
			r.Tables++
			name := fmt.Sprintf("%06d.sst", uint64(t.FileNum))
			if err := validateTable(fs, fs.PathJoin(engineDir, name), ropts); err != nil {
				r.Problems = append(r.Problems, &DamageError{File: engineFile(name), Offset: -1, Reason: err.Error()})
			}
		}
	}
	if len(r.Problems) > 0 {
		return r, nil
	}
	if err := db.CheckLevels(nil); err != nil {
		r.Problems = append(r.Problems, &DamageError{File: EngineDir, Offset: -1, Reason: "the engine's levels are inconsistent: " + err.Error()})
		return r, nil
	}
	checkRecords(db, r)
	return r, nil
}

// checkRecords checks every record, cluster by cluster, and counts them.
func checkRecords(db *pebble.DB, r *CheckReport) {
	v, closer, err := db.Get(keyFormatRecord)
	if err != nil {
		r.Problems = append(r.Problems, &DamageError{Key: describeKey(keyFormatRecord), Reason: fmt.Sprintf("cannot read it: %v", err)})
	} else {
		var f formatRecord
		if err := decodeJSON(keyFormatRecord, v, &f); err != nil {
			r.Problems = append(r.Problems, err)
		}
		closer.Close()
	}
	if err := checkOutsideKeys(db); err != nil {
		r.Problems = append(r.Problems, err)
	}
	ids, err := listClusters(db)
	if err != nil {
		r.Problems = append(r.Problems, err)
		return
	}
	r.Clusters = len(ids)
	for _, id := range ids {
		st, _, err := loadCluster(db, id)
		if err != nil {
			r.Problems = append(r.Problems, err)
			continue
		}
		r.Jobs += len(st.Jobs)
		r.LogEntries += len(st.Log)
	}
}

// checkLegacy checks a format-1 to -3 store as Open would read it to
// migrate it.
func checkLegacy(dir string, o Options, r *CheckReport) error {
	ls, err := readLegacy(dir, max(o.LockTimeout, time.Second))
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			r.Problems = append(r.Problems, err)
			return nil
		}
		return err
	}
	r.Format = ls.format
	r.TornTailBytes = ls.torn
	r.Clusters = len(ls.clusters)
	for _, st := range ls.clusters {
		r.Jobs += len(st.Jobs)
		r.LogEntries += len(st.Log)
	}
	return nil
}

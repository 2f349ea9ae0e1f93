package store

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Migration of a format-1 to -3 data directory (legacy.go).
//
// Open reads the old store whole (bbolt file and log, checked), writes every
// cluster into the engine and, in the last batch, the format record that
// says it was migrated; only then are the old files renamed (kept, never
// deleted: remove them once satisfied). A crash before the format record
// leaves the engine without one: the next Open removes what the attempt
// wrote and migrates again. A crash after it leaves the old files in place:
// the next Open renames them.

// migrationBatchBytes bounds a batch of the migration.
const migrationBatchBytes = 4 << 20

// migrateLegacy migrates the legacy store of dir into the (open, unused)
// engine and returns the format it migrated.
func migrateLegacy(e *engine, fs vfs.FS, dir string, log *slog.Logger, lockTimeout time.Duration) (int, error) {
	if fs != vfs.Default {
		return 0, fmt.Errorf("store: %s holds a format-1 to -3 store, which is migrated on the operating system's file system only", dir)
	}
	ls, err := readLegacy(dir, lockTimeout)
	if err != nil {
		return 0, err
	}
	if empty, err := e.empty(); err != nil {
		return 0, e.readError(err)
	} else if !empty {
		// An earlier attempt's clusters, without its format record.
		if err := e.db.DeleteRange([]byte{0}, []byte{0xff}, pebble.Sync); err != nil {
			return 0, fmt.Errorf("store: clearing an unfinished migration: %w", err)
		}
	}
	b := e.db.NewBatch()
	for _, id := range slices.Sorted(maps.Keys(ls.clusters)) {
		if err := putState(b, ls.clusters[id]); err != nil {
			b.Close()
			return 0, err
		}
		if b.Len() >= migrationBatchBytes {
			if err := b.Commit(pebble.NoSync); err != nil {
				return 0, fmt.Errorf("store: migrating: %w", err)
			}
			b = e.db.NewBatch()
		}
	}
	v, err := encodeJSON(keyFormatRecord, formatRecord{Format: formatVersion, MigratedFrom: ls.format})
	if err == nil {
		err = b.Set(keyFormatRecord, v, nil)
	}
	if err == nil {
		err = b.Commit(pebble.Sync)
	}
	if err != nil {
		return 0, fmt.Errorf("store: migrating: %w", err)
	}
	log.Info("store: migrated the data directory to the storage engine", "dir", dir, "from_format", ls.format,
		"clusters", len(ls.clusters), "log_records_replayed", ls.replayed)
	if ls.torn > 0 {
		log.Warn("store: the old write-ahead log ended in a torn write (never acknowledged); it was not migrated", "bytes", ls.torn)
	}
	return ls.format, finishMigration(fs, dir, ls.format, log)
}

// putState writes a whole cluster state into b.
func putState(b *pebble.Batch, st *State) error {
	id := st.Cluster.ID
	if err := checkClusterID(id); err != nil {
		return err
	}
	op, err := newCreateOp(st.Cluster, st.Estimator)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", id, err)
	}
	sets := map[string][]byte{string(subKey(id, subDescription)): op.desc}
	if sets[string(subKey(id, subMeta))], err = encodeJSON(subKey(id, subMeta), st.Meta); err != nil {
		return err
	}
	for _, j := range st.Jobs {
		k := jobKey(id, j.ID)
		if sets[string(k)], err = encodeJSON(k, j); err != nil {
			return err
		}
	}
	for i, e := range st.Log {
		k := seqKey(id, subLog, uint64(i))
		sets[string(k)] = sealRecord(k, e)
	}
	if st.PolicyState != nil {
		k := subKey(id, subPolicy)
		sets[string(k)] = sealRecord(k, st.PolicyState)
	}
	for node, rec := range st.Beats {
		k := beatKey(id, node)
		sets[string(k)] = sealRecord(k, rec)
	}
	for _, k := range slices.Sorted(maps.Keys(sets)) {
		if err := b.Set([]byte(k), sets[k], nil); err != nil {
			return err
		}
	}
	if op.est != nil {
		h := *op.est
		return appendObservations(b, id, &h, op.observed)
	}
	return nil
}

// finishMigration moves the old files of a migrated directory aside (from:
// the format migrated, 0 if the store was created in this format).
func finishMigration(fs vfs.FS, dir string, from int, log *slog.Logger) error {
	legacy, err := hasLegacy(fs, dir)
	if err != nil || !legacy {
		return err
	}
	if from == 0 {
		return fmt.Errorf("store: %s holds both a store (%s/) and a format-1 to -3 store (%s) that was never migrated into it; move one of them aside",
			dir, EngineDir, legacyDBFile)
	}
	suffix := fmt.Sprintf(".format%d.migrated", from)
	for _, name := range []string{legacyDBFile, legacyWALDir} {
		old := filepath.Join(dir, name)
		if _, err := os.Stat(old); errors.Is(err, os.ErrNotExist) {
			continue
		}
		to := old + suffix
		if _, err := os.Stat(to); err == nil {
			to = fmt.Sprintf("%s.%d", to, time.Now().Unix())
		}
		if err := os.Rename(old, to); err != nil {
			return fmt.Errorf("store: moving the migrated %s aside: %w", name, err)
		}
		log.Info("store: kept the migrated format's file; delete it once satisfied", "file", to)
	}
	return syncDir(fs, dir)
}

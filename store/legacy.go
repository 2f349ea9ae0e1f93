package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/thresholds"
)

// Formats 1 to 3, read once to migrate them (migrate.go).
//
// They kept everything in one bbolt file, DATA_DIR/optd.db: bucket
// "clusters" held a bucket per cluster with key "meta" (JSON Meta) and
// buckets "jobs" (JSON Job by job id) and "log" (event-log entries by
// big-endian sequence number).
//
//   - Format 1 (no bucket "optd"): the description under the cluster's key
//     "cluster" and the whole estimator window as one JSON value under key
//     "estimator".
//   - Format 2 (bucket "optd", key "format" = 2): the description under
//     key "cluster" of the cluster's bucket "description", the window as
//     the bucket "estimator": key "state" (JSON {window, seen}) and the
//     observation numbered k under the 8-byte big-endian key (k−1) mod ω.
//   - Format 3: format 2 and a write-ahead log, directory optd.db.wal of
//     segments named by the LSN of their first record (16 hex digits,
//     ".log"), allocated at full size, each record length (4 bytes LE) ‖
//     CRC-32C of lsn ‖ payload (4 bytes LE) ‖ lsn (8 bytes LE) ‖ payload
//     (JSON [{cluster, change}]); key "wal_lsn" of bucket "optd" is the
//     last LSN the bbolt file holds.
//
// The values carry no checksum of their own, so they are decoded strictly
// (a renamed field is damage, not a zero) and checked for consistency, and
// bbolt's own check runs first. The log is read whole: a bad record is a
// torn write only if nothing but zeros follows it in the last segment.

const (
	legacyDBFile = "optd.db"
	legacyWALDir = "optd.db.wal"
	// legacySegmentSize is the size format 3 allocated a log segment with.
	legacySegmentSize = 16 << 20
)

// legacyStore is a format-1 to -3 store read into memory.
type legacyStore struct {
	format   int
	clusters map[string]*State
	// replayed counts the log records applied; torn is the size of a torn
	// write dropped at the end of the log.
	replayed int
	torn     int64
}

// readLegacy reads the store in data directory dir. Faults on the mapped
// file (a truncated file) are turned into errors, as are bbolt's panics on
// damaged pages.
func readLegacy(dir string, lockTimeout time.Duration) (ls *legacyStore, err error) {
	path := filepath.Join(dir, legacyDBFile)
	if err := checkBoltMeta(path); err != nil {
		return nil, err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: max(lockTimeout, 10*time.Millisecond)})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("%w: %s (an older optd is running on it)", ErrLocked, path)
		}
		return nil, &DamageError{File: legacyDBFile, Offset: -1, Reason: fmt.Sprintf("bbolt cannot open it: %v", err)}
	}
	defer db.Close()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			ls, err = nil, &DamageError{File: legacyDBFile, Offset: -1, Reason: fmt.Sprintf("reading it failed: %v", r)}
		}
	}()
	ls = &legacyStore{clusters: map[string]*State{}}
	var walLSN uint64
	err = db.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			return &DamageError{File: legacyDBFile, Offset: -1, Reason: "bbolt's check: " + cerr.Error()}
		}
		var err error
		if ls.format, walLSN, err = legacyFormat(tx); err != nil {
			return err
		}
		root := tx.Bucket([]byte("clusters"))
		if root == nil {
			return nil
		}
		return root.ForEachBucket(func(k []byte) error {
			st, err := readLegacyCluster(root.Bucket(k), ls.format)
			if err != nil {
				return fmt.Errorf("cluster %q: %w", k, err)
			}
			if st.Cluster.ID != string(k) {
				return legacyDamage(fmt.Sprintf("cluster %q: its description is of cluster %q", k, st.Cluster.ID))
			}
			ls.clusters[string(k)] = st
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(dir, legacyWALDir)); err == nil {
		ls.format = 3
		if ls.replayed, ls.torn, err = replayLegacyLog(filepath.Join(dir, legacyWALDir), walLSN, ls.clusters); err != nil {
			return nil, err
		}
	}
	return ls, nil
}

// checkBoltMeta checks both bbolt meta pages (bbolt would silently fall
// back to the older one if the newer were damaged, losing its transaction)
// and refuses a file shorter than they say it is (bbolt maps it and would
// fault on the missing pages).
func checkBoltMeta(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", path, err)
	}
	// A meta page: page header (16 bytes), then magic, version, page size,
	// flags (4 bytes each), root bucket (16), freelist, pgid, txid and the
	// FNV-1a checksum of what precedes it (8 bytes each).
	const header, size = 16, 64
	pageSize := 0
	var pgid uint64
	var txid uint64
	for i := range 2 {
		off := i * pageSize
		if len(data) < off+header+size {
			return &DamageError{File: legacyDBFile, Offset: int64(len(data)), Reason: fmt.Sprintf("the file is %d bytes, too short for bbolt meta page %d", len(data), i)}
		}
		m := data[off+header : off+header+size]
		h := fnv.New64a()
		h.Write(m[:56])
		if binary.LittleEndian.Uint32(m) != 0xED0CDAED || h.Sum64() != binary.LittleEndian.Uint64(m[56:]) {
			return &DamageError{File: legacyDBFile, Offset: int64(off + header), Reason: fmt.Sprintf("bbolt meta page %d fails its checksum", i)}
		}
		if i == 0 {
			pageSize = int(binary.LittleEndian.Uint32(m[8:]))
			if pageSize < 512 || pageSize > 1<<20 {
				return &DamageError{File: legacyDBFile, Offset: int64(header + 8), Reason: fmt.Sprintf("bbolt page size %d", pageSize)}
			}
		}
		if t := binary.LittleEndian.Uint64(m[48:]); i == 0 || t > txid {
			txid, pgid = t, binary.LittleEndian.Uint64(m[40:])
		}
	}
	if need := pgid * uint64(pageSize); uint64(len(data)) < need {
		return &DamageError{File: legacyDBFile, Offset: int64(len(data)),
			Reason: fmt.Sprintf("the file is %d bytes, its meta page says it holds %d pages of %d bytes: truncated", len(data), pgid, pageSize)}
	}
	return nil
}

func legacyDamage(reason string) error {
	return &DamageError{File: legacyDBFile, Offset: -1, Reason: reason}
}

// legacyFormat reads the format version and the log's LSN.
func legacyFormat(tx *bolt.Tx) (format int, walLSN uint64, err error) {
	meta := tx.Bucket([]byte("optd"))
	if meta == nil {
		return 1, 0, nil
	}
	if err := strictLegacy(meta.Get([]byte("format")), &format); err != nil {
		return 0, 0, legacyDamage(fmt.Sprintf(`bucket "optd", key "format": %v`, err))
	}
	if format != 2 {
		return 0, 0, fmt.Errorf("%w: %s says format %d; this optd migrates formats 1 to 3", ErrFormat, legacyDBFile, format)
	}
	if v := meta.Get([]byte("wal_lsn")); v != nil {
		if len(v) != 8 {
			return 0, 0, legacyDamage(fmt.Sprintf(`bucket "optd", key "wal_lsn" is %d bytes`, len(v)))
		}
		walLSN = binary.BigEndian.Uint64(v)
	}
	return format, walLSN, nil
}

// strictLegacy decodes one JSON value, known fields only.
func strictLegacy(data []byte, v any) error {
	if data == nil {
		return errors.New("missing")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON value")
	}
	return nil
}

func readLegacyCluster(b *bolt.Bucket, format int) (*State, error) {
	st := &State{}
	get := func(b *bolt.Bucket, where, key string, v any) error {
		if b == nil {
			return legacyDamage(fmt.Sprintf("%s is missing", where))
		}
		if err := strictLegacy(b.Get([]byte(key)), v); err != nil {
			return legacyDamage(fmt.Sprintf("%s, key %q: %v", where, key, err))
		}
		return nil
	}
	if format == 1 {
		if err := get(b, "the cluster bucket", "cluster", &st.Cluster); err != nil {
			return nil, err
		}
		if v := b.Get([]byte("estimator")); v != nil {
			st.Estimator = &thresholds.EstimatorState{}
			if err := get(b, "the cluster bucket", "estimator", st.Estimator); err != nil {
				return nil, err
			}
			if err := checkWindow(st.Estimator); err != nil {
				return nil, legacyDamage(err.Error())
			}
		}
	} else {
		if err := get(b.Bucket([]byte("description")), `bucket "description"`, "cluster", &st.Cluster); err != nil {
			return nil, err
		}
		if eb := b.Bucket([]byte("estimator")); eb != nil {
			var h estimatorHeader
			if err := get(eb, `bucket "estimator"`, "state", &h); err != nil {
				return nil, err
			}
			if h.Window < 1 || h.Seen < 0 {
				return nil, legacyDamage(fmt.Sprintf("estimator window %d, seen %d", h.Window, h.Seen))
			}
			ring := map[uint64]thresholds.Observation{}
			if err := eb.ForEach(func(k, v []byte) error {
				if string(k) == "state" {
					return nil
				}
				var o thresholds.Observation
				if len(k) != 8 || binary.BigEndian.Uint64(k) >= uint64(h.Window) {
					return legacyDamage(fmt.Sprintf("estimator key %x", k))
				}
				if err := strictLegacy(v, &o); err != nil {
					return legacyDamage(fmt.Sprintf("estimator observation %x: %v", k, err))
				}
				ring[binary.BigEndian.Uint64(k)] = o
				return nil
			}); err != nil {
				return nil, err
			}
			var err error
			if st.Estimator, err = h.window(st.Cluster.ID, ring); err != nil {
				return nil, legacyDamage(err.Error())
			}
		}
	}
	if err := get(b, "the cluster bucket", "meta", &st.Meta); err != nil {
		return nil, err
	}
	jobs := b.Bucket([]byte("jobs"))
	if jobs == nil {
		return nil, legacyDamage(`bucket "jobs" is missing`)
	}
	if err := jobs.ForEach(func(k, v []byte) error {
		var j Job
		if err := strictLegacy(v, &j); err != nil {
			return legacyDamage(fmt.Sprintf("job %q: %v", k, err))
		}
		if j.ID != string(k) || j.ID == "" {
			return legacyDamage(fmt.Sprintf("the record of job %q is of job %q", k, j.ID))
		}
		st.Jobs = append(st.Jobs, j)
		return nil
	}); err != nil {
		return nil, err
	}
	if lb := b.Bucket([]byte("log")); lb != nil {
		if err := lb.ForEach(func(_, v []byte) error {
			st.Log = append(st.Log, slices.Clone(v))
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// legacyEntry is one change of a format-3 log record.
type legacyEntry struct {
	Cluster string `json:"cluster"`
	Change  Change `json:"change"`
}

// replayLegacyLog applies the records of the log in dir after LSN applied
// to clusters.
func replayLegacyLog(dir string, applied uint64, clusters map[string]*State) (replayed int, torn int64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("store: reading %s: %w", dir, err)
	}
	var firsts []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".log")
		first, perr := strconv.ParseUint(name, 16, 64)
		if !ok || perr != nil || len(name) != 16 || e.IsDir() {
			return 0, 0, &DamageError{File: filepath.Join(legacyWALDir, e.Name()), Offset: -1, Reason: "not a log segment"}
		}
		firsts = append(firsts, first)
	}
	slices.Sort(firsts)
	next := applied + 1
	for i, first := range firsts {
		name := filepath.Join(legacyWALDir, fmt.Sprintf("%016x.log", first))
		if first > next {
			return 0, 0, &DamageError{File: name, Offset: 0, Reason: fmt.Sprintf("the log jumps from record %d to %d: a segment is missing", next-1, first)}
		}
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%016x.log", first)))
		if err != nil {
			return 0, 0, fmt.Errorf("store: %w", err)
		}
		// The data ends at its last non-zero byte (a segment is allocated
		// whole, zeros until written).
		last := dataEnd(data)
		off, lsn := 0, first
		for off < last {
			payload, n, ok := legacyRecord(data[off:], lsn)
			if !ok {
				if i < len(firsts)-1 {
					return 0, 0, &DamageError{File: name, Offset: int64(off), Reason: fmt.Sprintf("record %d is damaged and this is not the last segment", lsn)}
				}
				if later := findLegacyRecord(data[off+1:last], lsn); later >= 0 {
					return 0, 0, &DamageError{File: name, Offset: int64(off),
						Reason: fmt.Sprintf("record %d is damaged and a good record follows at byte %d", lsn, off+1+later)}
				}
				if len(data) < legacySegmentSize {
					// Format 3 allocated its segments whole: a torn write
					// leaves the size, a cut does not.
					return 0, 0, &DamageError{File: name, Offset: int64(len(data)),
						Reason: fmt.Sprintf("the segment ends inside record %d and is %d bytes, shorter than the %d format 3 allocated: it was truncated", lsn, len(data), legacySegmentSize)}
				}
				torn = int64(last - off)
				break
			}
			if lsn > applied {
				var entries []legacyEntry
				if err := strictLegacy(payload, &entries); err != nil {
					return 0, 0, &DamageError{File: name, Offset: int64(off), Reason: fmt.Sprintf("record %d: %v", lsn, err)}
				}
				for _, e := range entries {
					if err := applyLegacy(clusters, e); err != nil {
						return 0, 0, &DamageError{File: name, Offset: int64(off), Reason: fmt.Sprintf("record %d: %v", lsn, err)}
					}
				}
				replayed++
			}
			off += n
			lsn++
		}
		next = max(next, lsn)
	}
	if len(firsts) > 0 && next <= applied {
		return 0, 0, &DamageError{File: legacyWALDir, Offset: -1, Reason: fmt.Sprintf("the log ends at record %d, before record %d that %s holds", next-1, applied, legacyDBFile)}
	}
	return replayed, torn, nil
}

// legacyRecord decodes the record with LSN lsn at the start of data.
func legacyRecord(data []byte, lsn uint64) (payload []byte, size int, ok bool) {
	if len(data) < 16 {
		return nil, 0, false
	}
	n := binary.LittleEndian.Uint32(data)
	if binary.LittleEndian.Uint64(data[8:]) != lsn || uint64(len(data)-16) < uint64(n) {
		return nil, 0, false
	}
	payload = data[16 : 16+int(n)]
	if crc32.Update(crc32.Checksum(data[8:16], castagnoli), castagnoli, payload) != binary.LittleEndian.Uint32(data[4:]) {
		return nil, 0, false
	}
	return payload, 16 + int(n), true
}

// findLegacyRecord returns the offset of the first good record in data
// with an LSN above after, or -1.
func findLegacyRecord(data []byte, after uint64) int {
	for off := 0; off+16 <= len(data); off++ {
		lsn := binary.LittleEndian.Uint64(data[off+8:])
		if lsn <= after || lsn > after+1<<20 {
			continue
		}
		if _, _, ok := legacyRecord(data[off:], lsn); ok {
			return off
		}
	}
	return -1
}

// applyLegacy applies a logged change as format 3 did: deletes, then puts,
// then meta, observations and the log.
func applyLegacy(clusters map[string]*State, e legacyEntry) error {
	st := clusters[e.Cluster]
	if st == nil {
		return fmt.Errorf("a change of cluster %q, which does not exist", e.Cluster)
	}
	ch := e.Change
	for _, id := range ch.Delete {
		i := slices.IndexFunc(st.Jobs, func(j Job) bool { return j.ID == id })
		if i < 0 {
			return fmt.Errorf("a deletion of job %q, not in cluster %q", id, e.Cluster)
		}
		st.Jobs = slices.Delete(st.Jobs, i, i+1)
	}
	for _, j := range ch.Put {
		if j.ID == "" {
			return fmt.Errorf("a job without an id in cluster %q", e.Cluster)
		}
		if i := slices.IndexFunc(st.Jobs, func(o Job) bool { return o.ID == j.ID }); i >= 0 {
			st.Jobs[i] = j
		} else {
			st.Jobs = append(st.Jobs, j)
		}
	}
	if ch.Meta != nil {
		st.Meta = *ch.Meta
	}
	if len(ch.Observed) > 0 {
		est := st.Estimator
		if est == nil {
			return fmt.Errorf("observations for cluster %q, which has no estimator", e.Cluster)
		}
		for _, o := range ch.Observed {
			est.Seen++
			est.Observations = append(est.Observations, o)
			if len(est.Observations) > est.Window {
				est.Observations = est.Observations[1:]
			}
		}
	}
	if ch.TruncateLog {
		st.Log = nil
	}
	st.Log = append(st.Log, ch.Log...)
	return nil
}

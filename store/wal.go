package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The write-ahead log.
//
// A group of changes is durable once its record is in the log: one write(2)
// and one fdatasync(2) of an append-only file. A bbolt commit takes two
// fdatasyncs (pages, then the meta page) and rewrites every B+tree page on
// the path to each changed key, so acknowledging through the log halves the
// syncs on the answer's path and makes them small. The changes reach the
// bbolt file later, many groups per transaction, in a checkpoint
// (checkpoint.go), which also stores the LSN of the last record it holds
// (key "wal_lsn" of bucket "optd"). Open replays the records after that LSN
// and checkpoints them before anything else runs.
//
// Layout: the directory <database>.wal beside the database holds segment
// files named by the LSN of their first record (16 hex digits, ".log"),
// each allocated at its full size when created (walSegmentSize, zeros until
// written): a write then changes no file size, and fdatasync flushes the
// record alone instead of also committing the file system's journal
// (measured on this project's ext4 machines: 280 µs instead of 400–470 µs
// per write+fdatasync, and half the CPU time). A record is
//
//	length   uint32, little-endian: the payload's length
//	crc      uint32, little-endian: CRC-32C of lsn ‖ payload
//	lsn      uint64, little-endian
//	payload  the group's changes (JSON []walEntry)
//
// LSNs are consecutive from 1 across segments and across restarts. The first
// record that is short, fails its CRC or breaks the sequence ends the log: a
// crash can leave the tail of the last record written but not synced, and
// that record was never acknowledged. Such an end anywhere but in the last
// segment is corruption, as a segment is left for the next one only after
// its last record was synced.
//
// A failed write or fdatasync fails the store for good (every later change
// gets the error; restart to recover): after a failed fdatasync the kernel
// may have dropped the dirty pages and cleared the error (PostgreSQL's
// "fsyncgate"), so retrying on the same file could acknowledge lost data.

const (
	walHeaderSize = 16
	// walSegmentSize: the log moves to a new segment once its current one
	// holds this many bytes, so that checkpointed segments can be removed.
	walSegmentSize = 16 << 20
	// walMaxRecord bounds a record's payload when reading (a longer length
	// is a torn or corrupt header, not an allocation to attempt).
	walMaxRecord = 1 << 30
	walSuffix    = ".log"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// walDir is the log directory of the database at path.
func walDir(path string) string { return path + ".wal" }

func segmentName(first uint64) string { return fmt.Sprintf("%016x%s", first, walSuffix) }

// appendRecord appends the record (lsn, payload) to buf.
func appendRecord(buf []byte, lsn uint64, payload []byte) []byte {
	var h [walHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[8:], lsn)
	crc := crc32.Update(crc32.Checksum(h[8:16], crc32c), crc32c, payload)
	binary.LittleEndian.PutUint32(h[4:], crc)
	return append(append(buf, h[:]...), payload...)
}

// decodeRecords reads the records of one segment from data, the first of
// which must have LSN first. It calls fn for each valid record in order and
// returns the LSN after the last one and whether data ended cleanly (at a
// record boundary, followed by nothing or by the zeros of the segment's
// preallocated space) rather than at a torn or corrupt record.
func decodeRecords(data []byte, first uint64, fn func(lsn uint64, payload []byte) error) (next uint64, clean bool, err error) {
	next = first
	for len(data) > 0 {
		if allZero(data) {
			return next, true, nil
		}
		if len(data) < walHeaderSize {
			return next, false, nil
		}
		n := binary.LittleEndian.Uint32(data[0:])
		crc := binary.LittleEndian.Uint32(data[4:])
		lsn := binary.LittleEndian.Uint64(data[8:])
		if n > walMaxRecord || uint64(len(data)-walHeaderSize) < uint64(n) || lsn != next {
			return next, false, nil
		}
		payload := data[walHeaderSize : walHeaderSize+int(n)]
		if crc32.Update(crc32.Checksum(data[8:16], crc32c), crc32c, payload) != crc {
			return next, false, nil
		}
		if err := fn(lsn, payload); err != nil {
			return next, false, err
		}
		next++
		data = data[walHeaderSize+int(n):]
	}
	return next, true, nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// walSegment is a segment file and the LSNs it holds.
type walSegment struct {
	first uint64 // LSN of its first record (its name)
	last  uint64 // LSN of its last record (first−1 if none)
}

// listSegments returns the segments of dir by first LSN (none if dir does
// not exist).
func listSegments(dir string) ([]uint64, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: write-ahead log: %w", err)
	}
	var firsts []uint64
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), walSuffix)
		if !ok || e.IsDir() {
			continue
		}
		first, err := strconv.ParseUint(name, 16, 64)
		if err != nil || len(name) != 16 {
			return nil, fmt.Errorf("%w: write-ahead log %s: unexpected file %q", ErrCorrupt, dir, e.Name())
		}
		firsts = append(firsts, first)
	}
	slices.Sort(firsts)
	return firsts, nil
}

// readLog calls fn for every record of the log in dir with an LSN above
// after, in order, and returns the LSN after the last valid record (at least
// after+1). Records at or below after (already checkpointed) are skipped.
func readLog(dir string, after uint64, fn func(lsn uint64, payload []byte) error) (uint64, error) {
	firsts, err := listSegments(dir)
	if err != nil {
		return 0, err
	}
	next := after + 1
	for i, first := range firsts {
		if i == 0 && first > after+1 {
			return 0, fmt.Errorf("%w: write-ahead log %s starts at record %d, the database holds up to %d", ErrCorrupt, dir, first, after)
		}
		if i > 0 && first != next {
			return 0, fmt.Errorf("%w: write-ahead log %s: segment %s follows record %d", ErrCorrupt, dir, segmentName(first), next-1)
		}
		data, err := os.ReadFile(filepath.Join(dir, segmentName(first)))
		if err != nil {
			return 0, fmt.Errorf("store: write-ahead log: %w", err)
		}
		end, clean, err := decodeRecords(data, first, func(lsn uint64, payload []byte) error {
			if lsn <= after {
				return nil
			}
			return fn(lsn, payload)
		})
		if err != nil {
			return 0, err
		}
		if !clean && i < len(firsts)-1 {
			return 0, fmt.Errorf("%w: write-ahead log %s: segment %s is torn at record %d but is not the last", ErrCorrupt, dir, segmentName(first), end)
		}
		next = max(next, end)
	}
	return next, nil
}

// walWriter appends records to the log: only the committer goroutine calls
// append; the checkpointer calls release.
type walWriter struct {
	dir         string
	f           *os.File
	size        int64
	segmentSize int64 // walSegmentSize (tests make it smaller)
	cur         walSegment
	buf         []byte

	mu     sync.Mutex
	closed []walSegment // full segments not yet removed, oldest first
}

// openWAL starts a new segment whose first record will be next. The
// directory must hold no segment (Open removes them after recovery).
func openWAL(dir string, next uint64) (*walWriter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: write-ahead log: %w", err)
	}
	w := &walWriter{dir: dir, segmentSize: walSegmentSize}
	if err := w.startSegment(next); err != nil {
		return nil, err
	}
	return w, nil
}

// startSegment creates the segment whose first record is first and makes
// its directory entry durable.
func (w *walWriter) startSegment(first uint64) error {
	f, err := os.OpenFile(filepath.Join(w.dir, segmentName(first)), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("store: write-ahead log: %w", err)
	}
	if err := preallocate(f, w.segmentSize); err != nil {
		f.Close()
		return fmt.Errorf("store: write-ahead log: %w", err)
	}
	if err := syncDir(w.dir); err != nil {
		f.Close()
		return err
	}
	w.f, w.size, w.cur = f, 0, walSegment{first: first, last: first - 1}
	return nil
}

// append writes payload as the next record and syncs it; it returns the
// record's LSN.
func (w *walWriter) append(payload []byte) (uint64, error) {
	if w.size > 0 && w.size+walHeaderSize+int64(len(payload)) > w.segmentSize {
		if err := w.rotate(); err != nil {
			return 0, err
		}
	}
	lsn := w.cur.last + 1
	w.buf = appendRecord(w.buf[:0], lsn, payload)
	if _, err := w.f.WriteAt(w.buf, w.size); err != nil {
		return 0, fmt.Errorf("store: write-ahead log: %w", err)
	}
	if err := datasync(w.f); err != nil {
		return 0, fmt.Errorf("store: write-ahead log: %w", err)
	}
	w.size += int64(len(w.buf))
	w.cur.last = lsn
	return lsn, nil
}

// rotate closes the current segment (every record of it is synced) and
// starts the next.
func (w *walWriter) rotate() error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("store: write-ahead log: %w", err)
	}
	w.mu.Lock()
	w.closed = append(w.closed, w.cur)
	w.mu.Unlock()
	return w.startSegment(w.cur.last + 1)
}

// release removes the full segments whose records are all at or below
// applied (checkpointed).
func (w *walWriter) release(applied uint64) error {
	w.mu.Lock()
	var drop []walSegment
	for len(w.closed) > 0 && w.closed[0].last <= applied {
		drop = append(drop, w.closed[0])
		w.closed = w.closed[1:]
	}
	w.mu.Unlock()
	for _, s := range drop {
		if err := os.Remove(filepath.Join(w.dir, segmentName(s.first))); err != nil {
			return fmt.Errorf("store: write-ahead log: %w", err)
		}
	}
	return nil
}

// close closes the current segment; if every record is checkpointed
// (applied is the last LSN), it removes the whole log, so that a cleanly
// closed database has none.
func (w *walWriter) close(applied uint64) error {
	err := w.f.Close()
	if err == nil && applied == w.cur.last {
		err = removeLog(w.dir)
	}
	return err
}

// removeLog removes every segment of dir and syncs it.
func removeLog(dir string) error {
	firsts, err := listSegments(dir)
	if err != nil {
		return err
	}
	for _, first := range firsts {
		if err := os.Remove(filepath.Join(dir, segmentName(first))); err != nil {
			return fmt.Errorf("store: write-ahead log: %w", err)
		}
	}
	if len(firsts) == 0 {
		return nil
	}
	return syncDir(dir)
}

// syncDir makes the entries of dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: write-ahead log: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("store: write-ahead log: sync %s: %w", dir, err)
	}
	return nil
}

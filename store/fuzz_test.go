package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
)

// FuzzRecord: a sealed record opens to its payload under its key only; a
// flipped bit anywhere in it is refused; no input panics.
func FuzzRecord(f *testing.F) {
	f.Add([]byte("K\x00\x01cj"), []byte(`{"id":"j"}`), uint(3))
	f.Add([]byte{}, []byte{}, uint(0))
	f.Fuzz(func(t *testing.T, key, payload []byte, flip uint) {
		v := sealRecord(key, payload)
		got, err := openRecord(key, v)
		if err != nil || !bytes.Equal(got, payload) {
			t.Fatalf("openRecord(sealRecord) = %q, %v", got, err)
		}
		if _, err := openRecord(append(bytes.Clone(key), 'x'), v); err == nil {
			t.Fatal("a record opened under another key")
		}
		bad := bytes.Clone(v)
		bad[flip%uint(len(bad))] ^= 1 << (flip / 7 % 8)
		if _, err := openRecord(key, bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("a flipped bit: %v, want ErrCorrupt", err)
		}
		_, _ = openRecord(key, payload) // arbitrary bytes: no panic
		var j Job
		_ = decodeJSON(key, payload, &j)
	})
}

// FuzzKeys: keys built for any cluster and job id parse back; arbitrary
// bytes parse or are refused without a panic.
func FuzzKeys(f *testing.F) {
	f.Add("cluster", "job", uint64(7), []byte("K\x00\x01a"))
	f.Add("\x00", "\xff", uint64(0), []byte{})
	f.Fuzz(func(t *testing.T, id, job string, n uint64, raw []byte) {
		_, _ = parseKey(raw)
		_ = describeKey(raw)
		if checkClusterID(id) != nil {
			return
		}
		for _, c := range []struct {
			key  []byte
			want clusterKey
		}{
			{subKey(id, subDescription), clusterKey{cluster: id, sub: subDescription}},
			{subKey(id, subMeta), clusterKey{cluster: id, sub: subMeta}},
			{seqKey(id, subLog, n), clusterKey{cluster: id, sub: subLog, n: n}},
			{seqKey(id, subObservation, n), clusterKey{cluster: id, sub: subObservation, n: n}},
			{jobKey(id, job), clusterKey{cluster: id, sub: subJob, name: job}},
		} {
			got, ok := parseKey(c.key)
			if c.want.sub == subJob && job == "" {
				if ok {
					t.Fatalf("a job key with an empty id parsed: %+v", got)
				}
				continue
			}
			if !ok || got != c.want {
				t.Fatalf("parseKey(%q) = %+v, %v; want %+v", c.key, got, ok, c.want)
			}
			prefix := clusterPrefix(id)
			if !bytes.HasPrefix(c.key, prefix) || bytes.Compare(c.key, prefixEnd(prefix)) >= 0 {
				t.Fatalf("key %q outside its cluster's range", c.key)
			}
		}
	})
}

// FuzzScanChunks: any bytes scan without a panic; the good records end
// within the data, the tail after them too, and the good prefix scans the
// same on its own.
func FuzzScanChunks(f *testing.F) {
	f.Add([]byte{}, uint32(0))
	f.Add(make([]byte, 40), uint32(5))
	f.Add(bytes.Repeat([]byte{0xff}, 70000), uint32(2))
	f.Fuzz(func(t *testing.T, data []byte, logNum uint32) {
		s := scanChunks(data, logNum)
		if s.end < 0 || s.end > int64(len(data)) || s.tail < 0 || s.end+s.tail > int64(len(data)) || s.records < 0 {
			t.Fatalf("scan %+v of %d bytes", s, len(data))
		}
		p := scanChunks(data[:s.end], logNum)
		if p.records != s.records || p.end != s.end || p.tail != 0 {
			t.Fatalf("the good prefix scans %+v, the whole %+v", p, s)
		}
	})
}

// FuzzGuard: any bytes parse without a panic; records written parse back.
func FuzzGuard(f *testing.F) {
	f.Add([]byte{}, "000002.log", int64(4<<20))
	f.Fuzz(func(t *testing.T, data []byte, name string, size int64) {
		_, _, _ = parseGuard(data)
		if name == "" || len(name) > 1000 {
			return
		}
		file := make([]byte, guardSize)
		copy(file, encodeGuardRecord('W', name, size))
		wals, _, err := parseGuard(file)
		if err != nil || wals[name] != size {
			t.Fatalf("parseGuard of one record: %v, %v", wals, err)
		}
	})
}

// FuzzLegacyRecord: a format-3 log record decodes without a panic, and one
// written as format 3 did reads back.
func FuzzLegacyRecord(f *testing.F) {
	f.Add([]byte{}, []byte("[]"), uint64(1))
	f.Fuzz(func(t *testing.T, data, payload []byte, lsn uint64) {
		_, _, _ = legacyRecord(data, lsn)
		_ = findLegacyRecord(data, lsn)
		rec := appendLegacyRecord(nil, lsn, payload)
		got, n, ok := legacyRecord(rec, lsn)
		if !ok || n != len(rec) || !bytes.Equal(got, payload) {
			t.Fatalf("legacyRecord of a written record: %q, %d, %v", got, n, ok)
		}
	})
}

// FuzzDataEnd: dataEnd finds the last non-zero byte as a byte-by-byte scan
// does.
func FuzzDataEnd(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		want := len(b)
		for want > 0 && b[want-1] == 0 {
			want--
		}
		if got := dataEnd(b); got != want {
			t.Fatalf("dataEnd(%x) = %d, want %d", b, got, want)
		}
	})
}

// FuzzOneBitFromGood: one flipped bit anywhere in a good chunk (header or
// payload) is recognised, as a second method (flipping it back) shows; a
// chunk with a whole sector zeroed, as a write cut short leaves it, is not
// taken for a bit flip.
func FuzzOneBitFromGood(f *testing.F) {
	f.Add([]byte("a batch of changes"), uint32(7), uint(13), uint8(9))
	f.Fuzz(func(t *testing.T, payload []byte, logNum uint32, flip uint, typ uint8) {
		if len(payload) > 8000 || logNum == ^uint32(0) {
			return
		}
		typ = []uint8{1, 5, 9}[typ%3] // a full chunk of each format
		header := map[uint8]int{1: 7, 5: 11, 9: 19}[typ]
		c := make([]byte, header+len(payload))
		binary.LittleEndian.PutUint16(c[4:], uint16(len(payload)))
		c[6] = typ
		if header > 7 {
			binary.LittleEndian.PutUint32(c[7:], logNum)
		}
		copy(c[header:], payload)
		binary.LittleEndian.PutUint32(c, maskedCRC(c[6:]))
		if header == 7 {
			logNum = 0
		}
		if _, st := parseChunk(c, 0, len(c), logNum); st != chunkGood {
			t.Fatalf("the chunk written is not good")
		}
		bit := int(flip % uint(len(c)*8))
		c[bit/8] ^= 1 << (bit % 8)
		if _, st := parseChunk(c, 0, len(c), logNum); st == chunkGood {
			return // the flip made another good chunk (a length or type bit)
		}
		if !oneBitFromGood(c, 0, logNum) {
			t.Fatalf("bit %d flipped in a chunk of %d bytes (type %d) not recognised", bit, len(c), typ)
		}
		c[bit/8] ^= 1 << (bit % 8)
		if len(c) >= header+1024 {
			clear(c[header+512 : header+1024])
			if _, st := parseChunk(c, 0, len(c), logNum); st != chunkGood && oneBitFromGood(c, 0, logNum) {
				t.Fatalf("a zeroed sector taken for one flipped bit")
			}
		}
	})
}

package store

import (
	"encoding/binary"
	"hash/crc32"
	"slices"
)

// The engine's log and manifest files are sequences of 32 KiB blocks of
// checksummed chunks (the LevelDB record format as Pebble writes it): a
// chunk is
//
//	checksum  4 bytes: masked CRC-32C of the chunk from its type byte on
//	length    2 bytes: the payload's length
//	type      1 byte:  1–4 full/first/middle/last; 5–8 the same with the
//	          log's number; 9–12 also with the offset of the log synced
//	          when the chunk was written
//	[log number 4 bytes] [synced offset 8 bytes]
//	payload
//
// and a record is one full chunk or a first, middles and a last. Pebble
// reads such a file up to its first bad chunk and treats the rest as a
// torn write when nothing in the following blocks proves otherwise.
// scanChunks reads the same way and says where the good records end,
// whether damage is proven (a later chunk, anywhere after the bad one, says
// the log was synced beyond the good records) and how many bytes past the
// end are not zeros (written, never complete).

const (
	chunkBlockSize = 32 << 10
	chunkHeader    = 7
)

var chunkCRC = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is LevelDB's masked CRC-32C.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, chunkCRC)
	return (c>>15 | c<<17) + 0xa282ead8
}

// chunkScan is what scanChunks found.
type chunkScan struct {
	// records is the number of whole records before the first bad or
	// missing chunk; end is the offset just after the last of them.
	records int
	end     int64
	// stop is the offset where reading stopped: a bad chunk, a zero
	// header where the next chunk should be, or the end of the file.
	stop int64
	// provenBad: a good chunk after stop says the log was synced beyond
	// it, so the bytes at stop held acknowledged data.
	provenBad bool
	// bitFlip: the chunk at stop is whole and one flipped bit makes it
	// good: damage to written data, not a write cut short (which leaves
	// whole sectors unwritten, never one bit wrong).
	bitFlip bool
	// tail is the number of bytes from end to the last non-zero byte of
	// the file (0: nothing but zeros after the good records).
	tail int64
}

type chunk struct {
	pos    byte // 1 full, 2 first, 3 middle, 4 last
	logNum uint32
	hasLog bool
	synced int64 // -1: the chunk does not say
	size   int   // header + payload
}

type chunkStatus uint8

const (
	chunkBad chunkStatus = iota
	chunkGood
	// chunkEnd is the end-of-log trailer (a header naming the next log,
	// with no checksum): the log was closed cleanly.
	chunkEnd
)

// parseChunk parses the chunk at data[off:blockEnd] of log logNum (its
// number is checked before its checksum, as the trailer has none).
func parseChunk(data []byte, off, blockEnd int, logNum uint32) (chunk, chunkStatus) {
	var c chunk
	if off+chunkHeader > blockEnd {
		return c, chunkBad
	}
	sum := binary.LittleEndian.Uint32(data[off:])
	length := int(binary.LittleEndian.Uint16(data[off+4:]))
	typ := data[off+6]
	header := chunkHeader
	switch {
	case typ >= 1 && typ <= 4:
	case typ >= 5 && typ <= 8:
		header = 11
	case typ >= 9 && typ <= 12:
		header = 19
	default:
		return c, chunkBad
	}
	if off+header > blockEnd {
		return c, chunkBad
	}
	c = chunk{pos: (typ-1)%4 + 1, synced: -1, size: header + length}
	if header >= 11 {
		c.hasLog, c.logNum = true, binary.LittleEndian.Uint32(data[off+7:])
		// The trailer is exactly this; anything else naming the next log
		// is damage (the engine would take a damaged chunk whose log
		// number changed by one bit for the trailer, and drop the rest of
		// the log).
		if c.logNum == logNum+1 && sum == 0 && length == 0 && typ == 5 {
			return c, chunkEnd
		}
		if c.logNum != logNum {
			return c, chunkBad
		}
	}
	if off+header+length > blockEnd || maskedCRC(data[off+6:off+header+length]) != sum {
		return c, chunkBad
	}
	if header == 19 {
		c.synced = int64(binary.LittleEndian.Uint64(data[off+11:]))
	}
	return c, chunkGood
}

// padding reports whether data[off:blockEnd] is the zero padding a writer
// leaves at the end of a block too short for another chunk header.
func padding(data []byte, off, blockEnd int) bool {
	rem := blockEnd - off
	return rem < 19 && blockEnd%chunkBlockSize == 0 && (rem < chunkHeader || allZero(data[off:blockEnd]))
}

// scanChunks scans data, a log numbered logNum (0 for a manifest, whose
// chunks carry no number), as the engine reads it.
func scanChunks(data []byte, logNum uint32) chunkScan {
	s := chunkScan{stop: int64(len(data))}
	inRecord := false
	for off := 0; off < len(data); {
		blockEnd := min((off/chunkBlockSize+1)*chunkBlockSize, len(data))
		if padding(data, off, blockEnd) {
			off = blockEnd
			continue
		}
		c, status := parseChunk(data, off, blockEnd, logNum)
		if status == chunkEnd && !inRecord {
			// The log was closed cleanly: nothing after the trailer counts.
			return chunkScan{records: s.records, end: int64(off), stop: int64(off)}
		}
		if status != chunkGood || (c.pos == 1 || c.pos == 2) == inRecord {
			s.stop = int64(off)
			break
		}
		off += c.size
		inRecord = c.pos == 2 || c.pos == 3
		if !inRecord {
			s.records++
			s.end = int64(off)
		}
	}
	// Read ahead for a chunk that says the log was synced beyond the good
	// records. The engine looks only at the blocks after the one where
	// reading stopped, from their starts; here every offset after it is
	// tried, so that damage within the last block is caught too. A chunk
	// that says how far the log was synced also names its log, which with
	// its checksum leaves no false match.
	for o := int(s.stop) + 1; o+19 <= len(data); o++ {
		if t := data[o+6]; t < 9 || t > 12 || binary.LittleEndian.Uint32(data[o+7:]) != logNum {
			continue
		}
		blockEnd := min((o/chunkBlockSize+1)*chunkBlockSize, len(data))
		if c, status := parseChunk(data, o, blockEnd, logNum); status == chunkGood && c.synced > s.end {
			s.provenBad = true
			break
		}
	}
	s.tail = max(int64(dataEnd(data))-s.end, 0)
	if s.tail > 0 && !s.provenBad {
		s.bitFlip = oneBitFromGood(data, int(s.stop), logNum)
	}
	return s
}

// oneBitFromGood reports whether flipping one bit of the chunk at data[off:]
// (its checksum, length, type, or any byte its checksum covers) makes it a
// good chunk.
func oneBitFromGood(data []byte, off int, logNum uint32) bool {
	if off+chunkHeader > len(data) {
		return false
	}
	blockEnd := min((off/chunkBlockSize+1)*chunkBlockSize, len(data))
	good := func(d []byte) bool { _, status := parseChunk(d, off, blockEnd, logNum); return status == chunkGood }
	// A flip in the checksum, the length or the type changes the header:
	// try each.
	hdr := slices.Clone(data[off : off+chunkHeader])
	defer copy(data[off:], hdr)
	for bit := range chunkHeader * 8 {
		data[off+bit/8] ^= 1 << (bit % 8)
		ok := good(data)
		data[off+bit/8] ^= 1 << (bit % 8)
		if ok {
			return true
		}
	}
	// A flip in what the checksum covers (type, log number, synced
	// offset, payload) with the header's length: CRC-32C is linear, so the
	// flip of bit b of byte j changes the CRC by a value that depends only
	// on b and on the number of bytes after j; search it from the end.
	typ := data[off+6]
	header := chunkHeader
	switch {
	case typ >= 5 && typ <= 8:
		header = 11
	case typ >= 9 && typ <= 12:
		header = 19
	case typ < 1 || typ > 12:
		return false
	}
	length := int(binary.LittleEndian.Uint16(data[off+4:]))
	if off+header+length > blockEnd {
		return false
	}
	covered := data[off+6 : off+header+length]
	stored := unmaskCRC(binary.LittleEndian.Uint32(data[off:]))
	syndrome := crc32.Checksum(covered, chunkCRC) ^ stored
	if syndrome == 0 {
		return false
	}
	var v [8]uint32
	for b := range v {
		v[b] = chunkCRC[1<<b]
	}
	for j := len(covered) - 1; j >= 0; j-- {
		for b := range v {
			if v[b] == syndrome {
				return true
			}
			v[b] = chunkCRC[byte(v[b])] ^ v[b]>>8 // one more zero byte after the flip
		}
	}
	return false
}

// unmaskCRC inverts maskedCRC's mask.
func unmaskCRC(m uint32) uint32 {
	c := m - 0xa282ead8
	return c>>17 | c<<15
}

// dataEnd is the offset just after the last non-zero byte of b (0 if none),
// found a word at a time: logs are allocated whole, so most of one is zeros.
func dataEnd(b []byte) int {
	n := len(b)
	for n > 0 && n%8 != 0 && b[n-1] == 0 {
		n--
	}
	if n%8 == 0 {
		for n >= 8 && binary.LittleEndian.Uint64(b[n-8:n]) == 0 {
			n -= 8
		}
		for n > 0 && b[n-1] == 0 {
			n--
		}
	}
	return n
}

func allZero(b []byte) bool { return dataEnd(b) == 0 }

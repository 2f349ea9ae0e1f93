package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
)

// A stored value is
//
//	version  1 byte (recordVersion)
//	payload  JSON, or the opaque bytes of an event-log entry or policy state
//	crc      4 bytes, little-endian: CRC-32C of key ‖ version ‖ payload
//
// The engine checksums its blocks and log records too; this checksum is
// the record's own, so that a value that reaches the store intact through
// the engine but is not what the store wrote (a damaged byte in a block
// whose checksum was recomputed, a value under another key, a renamed JSON
// field) is refused, never decoded leniently. JSON payloads are decoded
// strictly as well: an unknown field or trailing data is damage.
const recordVersion = 1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordCRC is the checksum of key ‖ version ‖ payload.
func recordCRC(key []byte, version byte, payload []byte) uint32 {
	c := crc32.Update(0, castagnoli, key)
	c = crc32.Update(c, castagnoli, []byte{version})
	return crc32.Update(c, castagnoli, payload)
}

// sealRecord returns the stored form of payload under key.
func sealRecord(key, payload []byte) []byte {
	v := make([]byte, 0, 1+len(payload)+4)
	v = append(v, recordVersion)
	v = append(v, payload...)
	return binary.LittleEndian.AppendUint32(v, recordCRC(key, recordVersion, payload))
}

// openRecord checks the stored value under key and returns its payload
// (aliasing value).
func openRecord(key, value []byte) ([]byte, error) {
	if len(value) < 5 {
		return nil, &DamageError{Key: describeKey(key), Reason: fmt.Sprintf("value of %d bytes, shorter than a record's 5", len(value))}
	}
	if value[0] != recordVersion {
		return nil, &DamageError{Key: describeKey(key), Reason: fmt.Sprintf("record version %d (this optd writes %d)", value[0], recordVersion)}
	}
	payload := value[1 : len(value)-4]
	stored := binary.LittleEndian.Uint32(value[len(value)-4:])
	if got := recordCRC(key, value[0], payload); got != stored {
		return nil, &DamageError{Key: describeKey(key), Reason: fmt.Sprintf("checksum mismatch (stored %#08x, computed %#08x)", stored, got)}
	}
	return payload, nil
}

// encodeJSON returns the stored form of v as JSON under key.
func encodeJSON(key []byte, v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("store: encoding %s: %w", describeKey(key), err)
	}
	return sealRecord(key, data), nil
}

// decodeJSON checks the stored value under key and decodes its JSON
// payload into v strictly: one JSON value, known fields only.
func decodeJSON(key, value []byte, v any) error {
	payload, err := openRecord(key, value)
	if err != nil {
		return err
	}
	return strictJSON(key, payload, v)
}

func strictJSON(key, payload []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &DamageError{Key: describeKey(key), Reason: fmt.Sprintf("checksum matches but the JSON does not decode: %v", err)}
	}
	if dec.InputOffset() != int64(len(payload)) {
		return &DamageError{Key: describeKey(key), Reason: fmt.Sprintf("checksum matches but %d bytes follow the JSON value", int64(len(payload))-dec.InputOffset())}
	}
	return nil
}

// DamageError is a stored record or engine file that failed its checks.
// errors.Is(err, ErrCorrupt) holds.
type DamageError struct {
	// File is the damaged file (relative to the data directory), if known.
	File string
	// Offset is the byte offset in File, or -1.
	Offset int64
	// Key is the damaged record's key (see describeKey), if known.
	Key string
	// Reason says what is wrong.
	Reason string
}

func (e *DamageError) Error() string {
	var where string
	switch {
	case e.Key != "" && e.File != "":
		where = fmt.Sprintf("record %s in %s", e.Key, e.File)
	case e.Key != "":
		where = "record " + e.Key
	case e.File != "" && e.Offset >= 0:
		where = fmt.Sprintf("%s at byte %d", e.File, e.Offset)
	case e.File != "":
		where = e.File
	default:
		where = "the data directory"
	}
	return fmt.Sprintf("store: damaged %s: %s", where, e.Reason)
}

// Unwrap makes errors.Is(err, ErrCorrupt) hold.
func (e *DamageError) Unwrap() error { return ErrCorrupt }

// Package strictjson decodes one JSON document into a Go value strictly and
// says what is wrong in the document's own terms: the field path
// (`jobs[3].maps`), the value found and what is allowed, never a Go type
// name or a bare byte offset.
//
// encoding/json reports an unknown field without its path ("json: unknown
// field \"colour\""), a type mismatch with Go names and a dotted path without
// indexes ("cannot unmarshal string into Go struct field clusterJobJSON.jobs.maps
// of type int") and a syntax error with a byte offset only. Decode first walks
// the document's tokens alongside the target type, which knows the exact
// path at every token, and only then lets encoding/json fill the value, so
// every mistake a schema could state is reported by the walk.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// Error is a mistake in a document: Path is the JSON path of the field
// ("" for the document as a whole), Value the offending value as written
// (shortened; "" when the field is missing or the complaint is not about one
// value), Reason what is allowed.
type Error struct {
	Path, Value, Reason string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Path != "" {
		b.WriteString(e.Path)
		if e.Value != "" {
			b.WriteString(" = ")
			b.WriteString(e.Value)
		}
		b.WriteString(": ")
	} else if e.Value != "" {
		b.WriteString(e.Value)
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Decode decodes data, one JSON value and nothing after it, into v (a
// non-nil pointer), rejecting unknown fields, duplicate fields and values of
// the wrong JSON type or out of an integer type's range, with an *Error.
// Fields of type json.RawMessage or of a type with its own UnmarshalJSON are
// taken as they are (their own decoders check them); an error from such an
// UnmarshalJSON is returned with the field's path.
func Decode(data []byte, v any) error {
	t := reflect.TypeOf(v)
	if t == nil || t.Kind() != reflect.Pointer {
		panic("strictjson: Decode needs a pointer")
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Reason: "empty input: want a JSON " + jsonKind(t.Elem())}
	}
	w := &walker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	w.dec.UseNumber()
	if err := w.value(t.Elem(), ""); err != nil {
		return err
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		line, col := w.position(w.dec.InputOffset())
		return &Error{Reason: fmt.Sprintf("trailing data after the JSON %s (line %d, column %d)", jsonKind(t.Elem()), line, col)}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		// The walk accepts what encoding/json accepts, so this is a
		// custom UnmarshalJSON refusing its value: say where.
		return w.fallback(err)
	}
	return nil
}

// CheckSyntax returns an *Error when data is not exactly one well-formed
// JSON object: empty, a syntax error (with its line and column), or
// trailing data after it. Decoders that walk the document themselves call
// it first.
func CheckSyntax(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{Reason: "empty input: want a JSON object"}
	}
	w := &walker{data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return w.syntax(err, "")
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		line, col := w.position(w.dec.InputOffset())
		return &Error{Reason: fmt.Sprintf("trailing data after the JSON object (line %d, column %d)", line, col)}
	}
	return nil
}

type walker struct {
	data []byte
	dec  *json.Decoder
}

var (
	rawType         = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// position turns a byte offset into a 1-based line and column.
func (w *walker) position(off int64) (line, col int) {
	off = min(off, int64(len(w.data)))
	before := w.data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
	return line, col
}

// token reads the next token; a syntax error is reported at path.
func (w *walker) token(path string) (json.Token, error) {
	tok, err := w.dec.Token()
	if err == nil {
		return tok, nil
	}
	return nil, w.syntax(err, path)
}

func (w *walker) syntax(err error, path string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Path: path, Reason: "the JSON ends too early (truncated?)"}
	}
	// A Decoder's offsets depend on how it read the input; Unmarshal
	// scans the whole document and reports the absolute offset just past
	// the offending byte.
	off := w.dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(json.Unmarshal(w.data, new(any)), &se) {
		off = se.Offset - 1
	}
	line, col := w.position(off)
	msg := strings.TrimPrefix(err.Error(), "json: ")
	return &Error{Path: path, Reason: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, msg)}
}

// value checks the next JSON value against t.
func (w *walker) value(t reflect.Type, path string) error {
	if t == rawType || reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
		var raw json.RawMessage
		if err := w.dec.Decode(&raw); err != nil {
			return w.syntax(err, path)
		}
		if t == rawType {
			return nil
		}
		target := reflect.New(t)
		if err := json.Unmarshal(raw, target.Interface()); err != nil {
			return w.custom(err, path, raw)
		}
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := w.token(path)
	if err != nil {
		return err
	}
	if tok == nil { // null is accepted for every type, as encoding/json does
		return nil
	}
	if d, ok := tok.(json.Delim); ok {
		switch {
		case d == '{' && t.Kind() == reflect.Struct:
			return w.object(t, path)
		case d == '{' && t.Kind() == reflect.Map:
			return w.mapping(t, path)
		case d == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
			return w.array(t, path)
		case t.Kind() == reflect.Interface:
			return w.skip(d, path)
		}
		shown, got := "{…}", "an object"
		if d == '[' {
			shown, got = "[…]", "an array"
		}
		if path == "" {
			return &Error{Reason: "the document is " + got + "; want " + describe(t)}
		}
		return &Error{Path: path, Value: shown, Reason: "must be " + describe(t)}
	}
	return w.scalar(tok, t, path)
}

func (w *walker) scalar(tok json.Token, t reflect.Type, path string) error {
	bad := func() error { return &Error{Path: path, Value: show(tok), Reason: "must be " + describe(t)} }
	switch t.Kind() {
	case reflect.Interface:
		return nil
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return bad()
		}
	case reflect.String:
		s, ok := tok.(string)
		if !ok {
			return bad()
		}
		if reflect.PointerTo(t).Implements(textType) {
			if err := reflect.New(t).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
				return &Error{Path: path, Value: strconv.Quote(s), Reason: err.Error()}
			}
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := tok.(json.Number)
		if !ok {
			return bad()
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || reflect.Zero(t).OverflowInt(i) {
			if _, ferr := strconv.ParseFloat(string(n), 64); ferr == nil && !isInteger(string(n)) {
				return bad()
			}
			return &Error{Path: path, Value: string(n), Reason: fmt.Sprintf("out of range (at most %d in absolute value)", maxInt(t))}
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := tok.(json.Number)
		if !ok {
			return bad()
		}
		u, err := strconv.ParseUint(string(n), 10, 64)
		if err != nil || reflect.Zero(t).OverflowUint(u) {
			if !isInteger(string(n)) || strings.HasPrefix(string(n), "-") {
				return bad()
			}
			return &Error{Path: path, Value: string(n), Reason: "out of range"}
		}
	case reflect.Float32, reflect.Float64:
		n, ok := tok.(json.Number)
		if !ok {
			return bad()
		}
		if f, err := strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
			return &Error{Path: path, Value: string(n), Reason: "out of range for a number"}
		}
	default:
		return bad()
	}
	return nil
}

func isInteger(s string) bool { return !strings.ContainsAny(s, ".eE") }

func maxInt(t reflect.Type) int64 { return int64(1)<<(t.Bits()-1) - 1 }

func (w *walker) object(t reflect.Type, path string) error {
	fields := structFields(t)
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key := tok.(string)
		sub := join(path, key)
		f, ok := fields[key]
		if !ok {
			for name, g := range fields { // encoding/json matches names case-insensitively
				if strings.EqualFold(name, key) {
					f, ok = g, true
				}
			}
		}
		if !ok {
			return &Error{Path: sub, Reason: "unknown field (allowed here: " + strings.Join(fieldNames(t), ", ") + ")"}
		}
		if seen[strings.ToLower(key)] {
			return &Error{Path: sub, Reason: "duplicate field"}
		}
		seen[strings.ToLower(key)] = true
		if err := w.value(f, sub); err != nil {
			return err
		}
	}
	_, err := w.token(path) // '}'
	return err
}

func (w *walker) mapping(t reflect.Type, path string) error {
	kt := t.Key()
	for w.dec.More() {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		key := tok.(string)
		if reflect.PointerTo(kt).Implements(textType) {
			if err := reflect.New(kt).Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(key)); err != nil {
				return &Error{Path: join(path, key), Reason: "unknown key (" + lastPart(err.Error()) + ")"}
			}
		}
		if err := w.value(t.Elem(), join(path, key)); err != nil {
			return err
		}
	}
	_, err := w.token(path)
	return err
}

func (w *walker) array(t reflect.Type, path string) error {
	for i := 0; w.dec.More(); i++ {
		if t.Kind() == reflect.Array && i >= t.Len() {
			return &Error{Path: path, Reason: fmt.Sprintf("at most %d elements", t.Len())}
		}
		if err := w.value(t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	_, err := w.token(path)
	return err
}

// skip consumes the rest of a value whose opening delimiter was read.
func (w *walker) skip(open json.Delim, path string) error {
	for depth := 1; depth > 0; {
		tok, err := w.token(path)
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// custom reports an error of a type's own UnmarshalJSON at path: its
// message is kept (with encoding/json's wording translated) unless it is one
// of encoding/json's, which the walk of the raw value rewrites.
func (w *walker) custom(err error, path string, raw json.RawMessage) error {
	var se *Error
	if errors.As(err, &se) {
		return &Error{Path: joinPath(path, se.Path), Value: se.Value, Reason: se.Reason}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &Error{Path: joinPath(path, te.Field), Value: te.Value, Reason: "must be " + describe(te.Type)}
	}
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if name, ok := strings.CutPrefix(msg, "unknown field "); ok {
		return &Error{Path: joinPath(path, strings.Trim(name, `"`)), Reason: "unknown field"}
	}
	return &Error{Path: path, Value: shorten(string(raw)), Reason: msg}
}

func (w *walker) fallback(err error) error {
	return w.custom(err, "", nil)
}

// lastPart is what an error message says after its last ": ", the part
// that says what is allowed ("want map or reduce").
func lastPart(msg string) string {
	if i := strings.LastIndex(msg, ": "); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// joinPath appends a dotted sub-path to path.
func joinPath(path, sub string) string {
	switch {
	case sub == "":
		return path
	case path == "":
		return sub
	case strings.HasPrefix(sub, "["):
		return path + sub
	}
	return path + "." + sub
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// structFields maps each JSON name of t (embedded structs flattened) to
// its type.
func structFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				for k, v := range structFields(et) {
					out[k] = v
				}
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

// describe says what JSON a Go type takes, in JSON's words.
func describe(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(describe(t.Elem()))
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a JSON value"
}

func plural(s string) string {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "an "), "a ")
	switch {
	case s == "true or false":
		return "booleans"
	case strings.HasPrefix(s, "array of "):
		return "arrays of " + strings.TrimPrefix(s, "array of ")
	}
	return s + "s"
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "value"
}

// show formats a scalar token as it was written, shortened.
func show(tok json.Token) string {
	switch v := tok.(type) {
	case string:
		return shorten(strconv.Quote(v))
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	}
	return fmt.Sprint(tok)
}

const maxShown = 40

func shorten(s string) string {
	if len(s) > maxShown {
		return s[:maxShown] + "…"
	}
	return s
}

package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Typed inputs and results. The messages of the "Typed inputs" and "Typed
// results" sections of optd.proto are the CLI's JSON formats field for
// field (same names, every scalar with presence). Rather than a second
// decoder that would drift from the CLI's, the server turns a typed input
// back into its JSON (formatJSON) and decodes it with the CLI's strict
// decoder and validator: a typed request is refused exactly as the same
// file would be, naming the same field path. A result goes the other way:
// the Go result's JSON (what the CLI prints) is read into the message
// (resultMessage). A field of the Go result that the message lacks is
// dropped there, so that a field added to a result never fails a call;
// the tests compare every typed result with its JSON and fail on it.

// formatJSON is the JSON document of a typed input message: each populated
// field under its proto name, numbers as JSON numbers (64-bit integers
// too, which protojson would quote), non-finite floats as the strings
// protojson writes (the strict decoder then refuses them by field path).
func formatJSON(m proto.Message) ([]byte, error) {
	return json.Marshal(messageJSON(m.ProtoReflect()))
}

func messageJSON(m protoreflect.Message) map[string]any {
	out := map[string]any{}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList():
			l := v.List()
			items := make([]any, l.Len())
			for i := range items {
				items[i] = valueJSON(fd, l.Get(i))
			}
			out[string(fd.Name())] = items
		case fd.IsMap():
			entries := map[string]any{}
			v.Map().Range(func(k protoreflect.MapKey, x protoreflect.Value) bool {
				entries[k.String()] = valueJSON(fd.MapValue(), x)
				return true
			})
			out[string(fd.Name())] = entries
		default:
			out[string(fd.Name())] = valueJSON(fd, v)
		}
		return true
	})
	return out
}

func valueJSON(fd protoreflect.FieldDescriptor, v protoreflect.Value) any {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return messageJSON(v.Message())
	case protoreflect.DoubleKind, protoreflect.FloatKind:
		switch f := v.Float(); {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		default:
			return f
		}
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return string(ev.Name())
		}
		return int32(v.Enum())
	}
	return v.Interface()
}

// inputJSON returns the JSON text of a request's input given either typed
// (the message field typedField) or as text (the deprecated field
// jsonField): "" when neither is set, an error naming both when both are.
func inputJSON(typedField string, typed proto.Message, jsonField, text string) (string, error) {
	has := typed != nil && typed.ProtoReflect().IsValid()
	switch {
	case has && text != "":
		return "", invalid(jsonField, fmt.Sprintf("%d bytes", len(text)), "give %s or %s, not both", typedField, jsonField)
	case has:
		data, err := formatJSON(typed)
		if err != nil {
			return "", invalid(typedField, "<message>", "cannot be written as JSON: %v", err)
		}
		return string(data), nil
	}
	return text, nil
}

// resultMessage fills m from v's JSON (what the CLI prints for the same
// result). JSON nulls (an interval or a gap that does not exist) are
// absent fields or map entries of m.
func resultMessage(v any, m proto.Message) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	if data, err = withoutNulls(data); err != nil {
		return fmt.Errorf("encoding the result: %w", err)
	}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, m); err != nil {
		return fmt.Errorf("encoding the result as %s: %w", m.ProtoReflect().Descriptor().Name(), err)
	}
	return nil
}

// withoutNulls drops every null member of the JSON's objects, keeping the
// numbers' text exact.
func withoutNulls(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(dropNulls(v))
}

func dropNulls(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			if x == nil {
				delete(t, k)
			} else {
				t[k] = dropNulls(x)
			}
		}
	case []any:
		for i, x := range t {
			t[i] = dropNulls(x)
		}
	}
	return v
}

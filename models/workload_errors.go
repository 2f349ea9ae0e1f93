package models

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/optd/optd/internal/errkind"
)

// ErrInvalidWorkload is the sentinel wrapped by every error about a workload
// specification (docs/formats.md#workload) or about the arguments of a law's constructor.
// Test with errors.Is; get the field with errors.As(err, new(*ValidationError)).
var ErrInvalidWorkload = errkind.New(errkind.Invalid, "models: invalid workload")

// ValidationError says which field of a workload is wrong, with its value and why.
//
// Field is the JSON path of the field ("data.alpha", "reduces.values[3]",
// "joint[2].prob"); it is empty for the document as a whole. A caller that embeds
// a workload in a larger document may prefix Field (e.g. "workload.") before
// printing. Value is the offending value (nil when the field is missing or the
// complaint is about the field as a whole). Err is the underlying cause, if any
// (e.g. an *fs.PathError for a missing sample file).
//
// The message reads
//
//	models: invalid workload: data.alpha = 0.8: must be > 1
type ValidationError struct {
	Field  string
	Value  any
	Reason string
	Err    error
}

// Error implements error.
func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString(ErrInvalidWorkload.Error())
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		if e.Value != nil {
			b.WriteString(" = ")
			b.WriteString(formatValue(e.Value))
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrInvalidWorkload and the cause, if any.
func (e *ValidationError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrInvalidWorkload, e.Err}
	}
	return []error{ErrInvalidWorkload}
}

// maxValueText bounds how much of a raw JSON value an error message quotes.
const maxValueText = 40

func formatValue(v any) string {
	switch v := v.(type) {
	case float64:
		return formatFloat(v)
	case int:
		return strconv.Itoa(v)
	case string:
		return strconv.Quote(v)
	case json.RawMessage:
		s := string(v)
		if len(s) > maxValueText {
			s = s[:maxValueText] + "…"
		}
		return s
	default:
		return fmt.Sprint(v)
	}
}

// formatFloat writes v as encoding/json would (1e-9, 0.97, 1000000), and NaN
// and ±Inf as Go does.
func formatFloat(v float64) string {
	if !isFinite(v) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// invalid builds a *ValidationError.
func invalid(field string, value any, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// joinPath appends a field name to a JSON path ("" is the root).
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// indexPath appends an array index to a JSON path.
func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

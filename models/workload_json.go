package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/optd/optd/internal/strictjson"
)

// workloadSpec is the JSON form of a workload (docs/formats.md#workload): either Data and
// Reduces, or Joint.
type workloadSpec struct {
	Data    *dataSpec    `json:"data,omitempty"`
	Reduces *reduceSpec  `json:"reduces,omitempty"`
	Joint   []JointPoint `json:"joint,omitempty"`
}

// dataSpec is the JSON form of a data law; which fields are set depends on Kind
// (dataFields).
type dataSpec struct {
	Kind    string    `json:"kind"`
	Min     *float64  `json:"min,omitempty"`
	Max     *float64  `json:"max,omitempty"`
	Mean    *float64  `json:"mean,omitempty"`
	Mu      *float64  `json:"mu,omitempty"`
	Sigma   *float64  `json:"sigma,omitempty"`
	Shape   *float64  `json:"shape,omitempty"`
	Scale   *float64  `json:"scale,omitempty"`
	Xm      *float64  `json:"xm,omitempty"`
	Alpha   *float64  `json:"alpha,omitempty"`
	Values  []float64 `json:"values,omitempty"`
	Probs   []float64 `json:"probs,omitempty"`
	Samples []float64 `json:"samples,omitempty"`
	File    string    `json:"file,omitempty"`
}

// reduceSpec is the JSON form of a law of R.
type reduceSpec struct {
	Kind   string    `json:"kind"`
	Min    *int      `json:"min,omitempty"`
	Max    *int      `json:"max,omitempty"`
	Values []int     `json:"values,omitempty"`
	Probs  []float64 `json:"probs,omitempty"`
}

// Field names of each kind, in the order they are checked.
var (
	dataKinds  = []string{KindUniform, KindExponential, KindLognormal, KindGamma, KindPareto, KindDiscrete, KindEmpirical}
	dataFields = map[string][]string{
		KindUniform:     {"min", "max"},
		KindExponential: {"mean"},
		KindLognormal:   {"mu", "sigma"},
		KindGamma:       {"shape", "scale"},
		KindPareto:      {"xm", "alpha"},
		KindDiscrete:    {"values", "probs"},
		KindEmpirical:   {"samples", "file"},
	}
	reduceKinds  = []string{KindUniformInt, KindDiscrete}
	reduceFields = map[string][]string{
		KindUniformInt: {"min", "max"},
		KindDiscrete:   {"values", "probs"},
	}
)

func decodeWorkload(data []byte, baseDir, path string) (*Workload, error) {
	if err := checkSyntax(data, path); err != nil {
		return nil, err
	}
	o, err := parseObject(data, path)
	if err != nil {
		return nil, err
	}
	if err := o.allow("data", "reduces", "joint"); err != nil {
		return nil, err
	}
	hasJoint, hasData, hasReduces := o.has("joint"), o.has("data"), o.has("reduces")
	switch {
	case hasJoint && (hasData || hasReduces):
		other := "data"
		if !hasData {
			other = "reduces"
		}
		return nil, invalid(o.field("joint"), nil, "must not be given together with %s", other)
	case hasJoint:
		points, err := decodeJoint(o.fields["joint"], o.field("joint"))
		if err != nil {
			return nil, err
		}
		return newJointWorkload(o.field("joint"), points)
	case !hasData && !hasReduces:
		return nil, invalid(path, nil, "give either joint or both data and reduces")
	case !hasData:
		return nil, invalid(o.field("data"), nil, "missing")
	case !hasReduces:
		return nil, invalid(o.field("reduces"), nil, "missing")
	}
	ds, d, err := decodeData(o.fields["data"], baseDir, o.field("data"))
	if err != nil {
		return nil, err
	}
	rs, err := decodeReduceSpec(o.fields["reduces"], o.field("reduces"))
	if err != nil {
		return nil, err
	}
	r, err := newReduceLaw(rs, o.field("reduces"))
	if err != nil {
		return nil, err
	}
	w := newIndependentWorkload(d, r)
	w.spec = workloadSpec{Data: ds, Reduces: rs}
	return w, nil
}

// DecodeDist decodes one data law ({"kind": ..., ...} as in docs/formats.md#workload)
// found at the JSON path field of a larger document (e.g. "slots.cost"), with
// the same strictness and error messages as DecodeWorkload.
func DecodeDist(data []byte, baseDir, field string) (Dist, error) {
	if err := checkSyntax(data, field); err != nil {
		return nil, err
	}
	_, d, err := decodeData(data, baseDir, field)
	return d, err
}

func decodeData(raw json.RawMessage, baseDir, path string) (*dataSpec, Dist, error) {
	spec, err := decodeDataSpec(raw, path)
	if err != nil {
		return nil, nil, err
	}
	d, err := newDataLaw(spec, baseDir, path)
	if err != nil {
		return nil, nil, err
	}
	return spec, d, nil
}

func decodeDataSpec(raw json.RawMessage, path string) (*dataSpec, error) {
	o, err := parseObject(raw, path)
	if err != nil {
		return nil, err
	}
	kind, err := o.kind(dataKinds, dataFields)
	if err != nil {
		return nil, err
	}
	s := &dataSpec{Kind: kind}
	var errs []error
	num := func(name string) *float64 {
		v, err := o.number(name)
		errs = append(errs, err)
		return v
	}
	nums := func(name string) []float64 {
		v, err := o.numbers(name)
		errs = append(errs, err)
		return v
	}
	switch kind {
	case KindUniform:
		s.Min, s.Max = num("min"), num("max")
	case KindExponential:
		s.Mean = num("mean")
	case KindLognormal:
		s.Mu, s.Sigma = num("mu"), num("sigma")
	case KindGamma:
		s.Shape, s.Scale = num("shape"), num("scale")
	case KindPareto:
		s.Xm, s.Alpha = num("xm"), num("alpha")
	case KindDiscrete:
		s.Values, s.Probs = nums("values"), nums("probs")
	case KindEmpirical:
		switch hasS, hasF := o.has("samples"), o.has("file"); {
		case hasS && hasF:
			return nil, invalid(o.field("file"), nil, "must not be given together with samples")
		case hasF:
			s.File, err = o.str("file")
			if err == nil && s.File == "" {
				err = invalid(o.field("file"), "", "must not be empty")
			}
			errs = append(errs, err)
		default:
			s.Samples = nums("samples")
		}
	}
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return s, nil
}

// newDataLaw validates the values of a decoded data law and builds it.
func newDataLaw(s *dataSpec, baseDir, path string) (Dist, error) {
	switch s.Kind {
	case KindUniform:
		return newUniform(path, *s.Min, *s.Max)
	case KindExponential:
		return newExponential(path, *s.Mean)
	case KindLognormal:
		return newLognormal(path, *s.Mu, *s.Sigma)
	case KindGamma:
		return newGamma(path, *s.Shape, *s.Scale)
	case KindPareto:
		return newPareto(path, *s.Xm, *s.Alpha)
	case KindDiscrete:
		return newDiscrete(path, s.Values, s.Probs)
	case KindEmpirical:
		if s.File == "" {
			return newEmpirical(path, "samples", s.Samples)
		}
		file := s.File
		if !filepath.IsAbs(file) {
			file = filepath.Join(baseDir, file)
		}
		samples, err := readSamples(file)
		if err != nil {
			return nil, &ValidationError{Field: joinPath(path, "file"), Value: s.File, Reason: err.Error(), Err: err}
		}
		return newEmpirical(path, "file", samples)
	}
	panic("models: unreachable data kind " + s.Kind)
}

func decodeReduceSpec(raw json.RawMessage, path string) (*reduceSpec, error) {
	o, err := parseObject(raw, path)
	if err != nil {
		return nil, err
	}
	kind, err := o.kind(reduceKinds, reduceFields)
	if err != nil {
		return nil, err
	}
	s := &reduceSpec{Kind: kind}
	var errs []error
	switch kind {
	case KindUniformInt:
		var lo, hi int
		lo, err = o.reduceCount("min")
		errs = append(errs, err)
		hi, err = o.reduceCount("max")
		errs = append(errs, err)
		s.Min, s.Max = &lo, &hi
	case KindDiscrete:
		s.Values, err = o.reduceCounts("values")
		errs = append(errs, err)
		s.Probs, err = o.numbers("probs")
		errs = append(errs, err)
	}
	if err := firstError(errs); err != nil {
		return nil, err
	}
	return s, nil
}

func newReduceLaw(s *reduceSpec, path string) (ReduceDist, error) {
	if s.Kind == KindUniformInt {
		return newUniformInt(path, *s.Min, *s.Max)
	}
	return newDiscreteReduces(path, s.Values, s.Probs)
}

func decodeJoint(raw json.RawMessage, path string) ([]JointPoint, error) {
	elems, err := parseArray(raw, path)
	if err != nil {
		return nil, err
	}
	points := make([]JointPoint, len(elems))
	for i, e := range elems {
		o, err := parseObject(e, indexPath(path, i))
		if err != nil {
			return nil, err
		}
		if err := o.allow("data", "reduces", "prob"); err != nil {
			return nil, err
		}
		data, err := o.number("data")
		if err != nil {
			return nil, err
		}
		r, err := o.reduceCount("reduces")
		if err != nil {
			return nil, err
		}
		prob, err := o.number("prob")
		if err != nil {
			return nil, err
		}
		points[i] = JointPoint{Data: *data, Reduces: r, Prob: *prob}
	}
	return points, nil
}

func firstError(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkSyntax rejects input that is not one well-formed JSON value, with the
// line and column of the error.
func checkSyntax(data []byte, path string) error {
	err := strictjson.CheckSyntax(data)
	var se *strictjson.Error
	if errors.As(err, &se) {
		return &ValidationError{Field: path, Reason: se.Reason, Err: err}
	}
	return err
}

// jsonObject is a JSON object split into its fields, in document order, for
// strict decoding with full field paths.
type jsonObject struct {
	path   string
	keys   []string
	fields map[string]json.RawMessage
}

// parseObject splits a well-formed JSON value that must be an object; a
// duplicate field is an error.
func parseObject(raw json.RawMessage, path string) (*jsonObject, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, invalid(path, valueOrNil(raw), "must be an object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '{'
		return nil, &ValidationError{Field: path, Reason: "invalid JSON: " + err.Error(), Err: err}
	}
	o := &jsonObject{path: path, fields: make(map[string]json.RawMessage)}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, &ValidationError{Field: path, Reason: "invalid JSON: " + err.Error(), Err: err}
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, &ValidationError{Field: joinPath(path, key), Reason: "invalid JSON: " + err.Error(), Err: err}
		}
		if _, dup := o.fields[key]; dup {
			return nil, invalid(joinPath(path, key), nil, "duplicate field")
		}
		o.keys = append(o.keys, key)
		o.fields[key] = v
	}
	return o, nil
}

// parseArray splits a well-formed JSON value that must be an array.
func parseArray(raw json.RawMessage, path string) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, invalid(path, valueOrNil(raw), "must be an array")
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, &ValidationError{Field: path, Reason: "invalid JSON: " + err.Error(), Err: err}
	}
	if len(elems) == 0 {
		return nil, invalid(path, nil, "must not be empty")
	}
	return elems, nil
}

func valueOrNil(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

func (o *jsonObject) field(name string) string { return joinPath(o.path, name) }

func (o *jsonObject) has(name string) bool {
	_, ok := o.fields[name]
	return ok
}

// allow rejects the first field (in document order) not among names.
func (o *jsonObject) allow(names ...string) error {
	for _, k := range o.keys {
		if !contains(names, k) {
			return invalid(o.field(k), nil, "unknown field")
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// kind reads the "kind" field, checks it against kinds and then rejects fields
// the kind does not have.
func (o *jsonObject) kind(kinds []string, fields map[string][]string) (string, error) {
	kind, err := o.str("kind")
	if err != nil {
		return "", err
	}
	if !contains(kinds, kind) {
		return "", invalid(o.field("kind"), kind, "unknown kind (want one of %s)", strings.Join(kinds, ", "))
	}
	return kind, o.allow(append([]string{"kind"}, fields[kind]...)...)
}

func (o *jsonObject) require(name string) (json.RawMessage, error) {
	raw, ok := o.fields[name]
	if !ok {
		return nil, invalid(o.field(name), nil, "missing")
	}
	return raw, nil
}

func (o *jsonObject) str(name string) (string, error) {
	raw, err := o.require(name)
	if err != nil {
		return "", err
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", invalid(o.field(name), raw, "must be a string")
	}
	return s, nil
}

func (o *jsonObject) number(name string) (*float64, error) {
	raw, err := o.require(name)
	if err != nil {
		return nil, err
	}
	v, err := parseNumber(raw, o.field(name))
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func (o *jsonObject) numbers(name string) ([]float64, error) {
	raw, err := o.require(name)
	if err != nil {
		return nil, err
	}
	elems, err := parseArray(raw, o.field(name))
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(elems))
	for i, e := range elems {
		v, ok := fastNumber(e)
		if !ok {
			_, err := parseNumber(e, indexPath(o.field(name), i))
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (o *jsonObject) reduceCount(name string) (int, error) {
	raw, err := o.require(name)
	if err != nil {
		return 0, err
	}
	return parseReduceCount(raw, o.field(name))
}

func (o *jsonObject) reduceCounts(name string) ([]int, error) {
	raw, err := o.require(name)
	if err != nil {
		return nil, err
	}
	elems, err := parseArray(raw, o.field(name))
	if err != nil {
		return nil, err
	}
	out := make([]int, len(elems))
	for i, e := range elems {
		if out[i], err = parseReduceCount(e, indexPath(o.field(name), i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parseNumber reads a JSON number that fits a finite float64.
func parseNumber(raw json.RawMessage, field string) (float64, error) {
	if v, ok := fastNumber(raw); ok {
		return v, nil
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, invalid(field, valueOrNil(raw), "must be a number")
	}
	return 0, invalid(field, raw, "must be a finite number")
}

// fastNumber parses raw if it is a JSON number that fits a finite float64.
func fastNumber(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	return v, err == nil && isFinite(v)
}

// parseReduceCount reads a JSON number that must be an integer in
// 1..MaxReducesLimit (1e2 is the integer 100).
func parseReduceCount(raw json.RawMessage, field string) (int, error) {
	v, err := parseNumber(raw, field)
	if err != nil {
		return 0, err
	}
	switch {
	case v != math.Trunc(v):
		return 0, invalid(field, v, "must be an integer")
	case v < 1:
		return 0, invalid(field, v, "must be ≥ 1")
	case v > MaxReducesLimit:
		return 0, invalid(field, v, "must be ≤ %d", MaxReducesLimit)
	}
	return int(v), nil
}

package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Param describes one tunable parameter of a policy: its name, the paper's
// default, the range a policy search may explore and the scale it explores
// it on. It is the one parameter descriptor of optd: placement families
// declare theirs at registration (RegisterPlacement), heartbeat stages
// through Tunable, and package search searches over them.
type Param struct {
	Name string
	// Min ≤ Default ≤ Max.
	Min, Max, Default float64
	// Log: explore on a logarithmic scale (Min > 0).
	Log bool
	// Integer: the value takes whole values only.
	Integer bool
	// Doc says what the parameter does, in one line.
	Doc string
	// Fixed marks a setting of the policy's construction rather than of
	// its decisions (the size of a fit): given like any parameter, but not
	// searched, since its range's corners need more work than a search
	// evaluation may take.
	Fixed bool
}

// Validate checks one value of the parameter.
func (p Param) Validate(v float64) error {
	if math.IsNaN(v) || v < p.Min || v > p.Max {
		return fmt.Errorf("%w: parameter %s = %v, must be in [%v, %v]", ErrInvalidConfig, p.Name, v, p.Min, p.Max)
	}
	if p.Integer && v != math.Round(v) {
		return fmt.Errorf("%w: parameter %s = %v, must be an integer", ErrInvalidConfig, p.Name, v)
	}
	return nil
}

// checkDeclarations checks a policy's parameter declarations.
func checkDeclarations(policy string, params []Param) error {
	for k, p := range params {
		switch {
		case p.Name == "" || strings.ContainsAny(p.Name, "=,:; "):
			return fmt.Errorf("%w: family %q parameter %d: name %q must be non-empty without '=,:; '", ErrInvalidConfig, policy, k, p.Name)
		case !(p.Min <= p.Default && p.Default <= p.Max) || math.IsInf(p.Min, 0) || math.IsInf(p.Max, 0):
			return fmt.Errorf("%w: family %q parameter %s: need finite Min ≤ Default ≤ Max, got %v, %v, %v", ErrInvalidConfig, policy, p.Name, p.Min, p.Default, p.Max)
		case p.Log && p.Min <= 0:
			return fmt.Errorf("%w: family %q parameter %s: a log scale needs Min > 0", ErrInvalidConfig, policy, p.Name)
		}
		if slices.ContainsFunc(params[:k], func(q Param) bool { return q.Name == p.Name }) {
			return fmt.Errorf("%w: family %q declares parameter %s twice", ErrInvalidConfig, policy, p.Name)
		}
	}
	return nil
}

// ParamName returns the name of a parameter as declared: parameter names
// are snake_case like every JSON field ("free_fraction"); the kebab-case
// spelling of earlier versions ("free-fraction") is still accepted, so that
// saved specs and scripts keep working, and mapped here. In a pipeline's
// STAGE.PARAM only PARAM is mapped: stage names are policy names, which are
// kebab-case ("haste-a.beta_fitness").
func ParamName(name string) string {
	i := strings.LastIndexByte(name, '.') + 1
	return name[:i] + strings.ReplaceAll(name[i:], "-", "_")
}

// ResolveParams returns the value of every declared parameter: the one in
// given, else the default. A name in given that is not declared, or a value
// out of range, is ErrInvalidConfig naming it. A placement family's factory
// calls it on PlacementConfig.Params.
func ResolveParams(family string, declared []Param, given map[string]float64) (map[string]float64, error) {
	out := make(map[string]float64, len(declared))
	for _, p := range declared {
		out[p.Name] = p.Default
	}
	for _, given0 := range slices.Sorted(maps.Keys(given)) {
		k := ParamName(given0)
		i := slices.IndexFunc(declared, func(p Param) bool { return p.Name == k })
		if i < 0 {
			names := make([]string, len(declared))
			for j, p := range declared {
				names[j] = p.Name
			}
			return nil, fmt.Errorf("%w: %s has no parameter %q (it has: %s)", ErrInvalidConfig, family, k, strings.Join(names, ", "))
		}
		if err := declared[i].Validate(given[given0]); err != nil {
			return nil, fmt.Errorf("%s: %w", family, err)
		}
		out[k] = given[given0]
	}
	return out, nil
}

// Tunable is implemented by the heartbeat stages that have parameters
// (slots, speculation and sharing policies): Params lists them with the
// paper's defaults, SetParam changes one. A policy search builds a stage by
// name, reads Params, and sets values inside [Min, Max].
type Tunable interface {
	Params() []Param
	SetParam(name string, v float64) error
}

// ParamSet binds parameter descriptions to the struct fields they set: a
// Tunable stage builds one from its fields (FloatParam, IntParam) and
// forwards Params and SetParam to it.
type ParamSet []BoundParam

// BoundParam is a Param and the field it sets.
type BoundParam struct {
	Param
	f *float64
	i *int
}

// FloatParam binds p to *f.
func FloatParam(f *float64, p Param) BoundParam { return BoundParam{Param: p, f: f} }

// IntParam binds p to *i (an integer parameter).
func IntParam(i *int, p Param) BoundParam {
	p.Integer = true
	return BoundParam{Param: p, i: i}
}

// Params returns the descriptions.
func (t ParamSet) Params() []Param {
	out := make([]Param, len(t))
	for k, b := range t {
		out[k] = b.Param
	}
	return out
}

// Set changes a parameter of stage after checking its name, range and
// integrality; on error nothing changes.
func (t ParamSet) Set(stage, name string, v float64) error {
	for _, b := range t {
		if b.Name != name {
			continue
		}
		if !(v >= b.Min && v <= b.Max) {
			return fmt.Errorf("%w: %s: %s = %v outside [%v, %v]", ErrInvalidConfig, stage, name, v, b.Min, b.Max)
		}
		if b.i != nil {
			if v != math.Trunc(v) {
				return fmt.Errorf("%w: %s: %s = %v must be a whole number", ErrInvalidConfig, stage, name, v)
			}
			*b.i = int(v)
			return nil
		}
		*b.f = v
		return nil
	}
	names := make([]string, len(t))
	for k, b := range t {
		names[k] = b.Name
	}
	slices.Sort(names)
	return fmt.Errorf("%w: %s has no parameter %q (known: %s)", ErrInvalidConfig, stage, name, strings.Join(names, ", "))
}

// Check verifies every current value is inside its range (for the
// constructors, so that a hand-built struct with a bad field is an error,
// not a silent misbehaviour).
func (t ParamSet) Check(stage string) error {
	for _, b := range t {
		v := 0.0
		if b.i != nil {
			v = float64(*b.i)
		} else {
			v = *b.f
		}
		if !(v >= b.Min && v <= b.Max) {
			return fmt.Errorf("%w: %s: %s = %v outside [%v, %v]", ErrInvalidConfig, stage, b.Name, v, b.Min, b.Max)
		}
	}
	return nil
}

// ParsePlacementSpec parses "name" or "name:k=v;k=v" (the form `optd bound
// --policies` and `optd search` print a tuned policy in) into a policy name
// and its parameters. It checks the syntax and the numbers only; the
// family's factory checks names and ranges.
func ParsePlacementSpec(spec string) (name string, params map[string]float64, err error) {
	name, rest, has := strings.Cut(strings.TrimSpace(spec), ":")
	if name == "" {
		return "", nil, fmt.Errorf("%w: policy spec %q: empty name", ErrInvalidConfig, spec)
	}
	if !has {
		return name, nil, nil
	}
	params = map[string]float64{}
	for _, kv := range strings.Split(rest, ";") {
		k, v, ok := strings.Cut(kv, "=")
		k = ParamName(strings.TrimSpace(k))
		if !ok || k == "" {
			return "", nil, fmt.Errorf("%w: policy spec %q: %q is not name=value", ErrInvalidConfig, spec, kv)
		}
		if _, dup := params[k]; dup {
			return "", nil, fmt.Errorf("%w: policy spec %q: parameter %s given twice", ErrInvalidConfig, spec, k)
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return "", nil, fmt.Errorf("%w: policy spec %q: %s = %q is not a finite number", ErrInvalidConfig, spec, k, v)
		}
		params[k] = x
	}
	return name, params, nil
}

// FormatPlacementSpec is the inverse of ParsePlacementSpec (parameters in
// name order, values in the shortest exact form).
func FormatPlacementSpec(name string, params map[string]float64) string {
	if len(params) == 0 {
		return name
	}
	parts := make([]string, 0, len(params))
	for _, k := range slices.Sorted(maps.Keys(params)) {
		parts = append(parts, fmt.Sprintf("%s=%s", k, strconv.FormatFloat(params[k], 'g', -1, 64)))
	}
	return name + ":" + strings.Join(parts, ";")
}

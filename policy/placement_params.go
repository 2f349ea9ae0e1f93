package policy

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ParamSpec declares one tunable parameter of a parameterized placement
// family: its name, range, default, the scale a search should explore it on
// and whether it is an integer. Package search turns these into its own
// parameter declarations; `optd bound` and the server pass values by name in
// PlacementConfig.Params.
type ParamSpec struct {
	Name string
	// Min ≤ Default ≤ Max.
	Min, Max, Default float64
	// Log: explore on a logarithmic scale (Min > 0).
	Log bool
	// Integer: the value is rounded to the nearest integer.
	Integer bool
	// Doc says what the parameter does, in one line.
	Doc string
}

// Validate checks one value of the parameter.
func (p ParamSpec) Validate(v float64) error {
	if math.IsNaN(v) || v < p.Min || v > p.Max {
		return fmt.Errorf("%w: parameter %s = %v, must be in [%v, %v]", ErrInvalidConfig, p.Name, v, p.Min, p.Max)
	}
	if p.Integer && v != math.Round(v) {
		return fmt.Errorf("%w: parameter %s = %v, must be an integer", ErrInvalidConfig, p.Name, v)
	}
	return nil
}

var placementParams = struct {
	sync.RWMutex
	m map[string][]ParamSpec
}{m: map[string][]ParamSpec{}}

// RegisterPlacementFamily registers a parameterized placement policy: its
// factory (as RegisterPlacement) and the declarations of the parameters it
// reads from PlacementConfig.Params. Safe for concurrent use.
func RegisterPlacementFamily(name string, f PlacementFactory, params []ParamSpec) error {
	for k, p := range params {
		switch {
		case p.Name == "" || strings.ContainsAny(p.Name, "=,:; "):
			return fmt.Errorf("%w: family %q parameter %d: name %q must be non-empty without '=,:; '", ErrInvalidConfig, name, k, p.Name)
		case !(p.Min <= p.Default && p.Default <= p.Max) || math.IsInf(p.Min, 0) || math.IsInf(p.Max, 0):
			return fmt.Errorf("%w: family %q parameter %s: need finite Min ≤ Default ≤ Max, got %v, %v, %v", ErrInvalidConfig, name, p.Name, p.Min, p.Default, p.Max)
		case p.Log && p.Min <= 0:
			return fmt.Errorf("%w: family %q parameter %s: a log scale needs Min > 0", ErrInvalidConfig, name, p.Name)
		}
		if slices.ContainsFunc(params[:k], func(q ParamSpec) bool { return q.Name == p.Name }) {
			return fmt.Errorf("%w: family %q declares parameter %s twice", ErrInvalidConfig, name, p.Name)
		}
	}
	if err := RegisterPlacement(name, f); err != nil {
		return err
	}
	placementParams.Lock()
	defer placementParams.Unlock()
	placementParams.m[name] = slices.Clone(params)
	return nil
}

// PlacementParams returns the parameters the placement policy registered
// under name declares (nil for a policy without parameters).
func PlacementParams(name string) []ParamSpec {
	placementParams.RLock()
	defer placementParams.RUnlock()
	return slices.Clone(placementParams.m[name])
}

// resolveParams returns the value of every declared parameter: the one in
// given, else the default. A name in given that is not declared, or a value
// out of range, is ErrInvalidConfig naming it.
func resolveParams(family string, specs []ParamSpec, given map[string]float64) (map[string]float64, error) {
	out := make(map[string]float64, len(specs))
	for _, p := range specs {
		out[p.Name] = p.Default
	}
	for _, k := range slices.Sorted(maps.Keys(given)) {
		i := slices.IndexFunc(specs, func(p ParamSpec) bool { return p.Name == k })
		if i < 0 {
			names := make([]string, len(specs))
			for j, p := range specs {
				names[j] = p.Name
			}
			return nil, fmt.Errorf("%w: %s has no parameter %q (it has: %s)", ErrInvalidConfig, family, k, strings.Join(names, ", "))
		}
		if err := specs[i].Validate(given[k]); err != nil {
			return nil, fmt.Errorf("%s: %w", family, err)
		}
		out[k] = given[k]
	}
	return out, nil
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
		k = strings.TrimSpace(k)
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
		parts = append(parts, fmt.Sprintf("%s=%s", k, formatFloat(params[k])))
	}
	return name + ":" + strings.Join(parts, ";")
}

func formatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

package search

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/policy"
)

// ErrInvalid is wrapped by every error about a search's input (parameters,
// options, --params).
var ErrInvalid = errkind.New(errkind.Invalid, "search: invalid input")

// Space is the parameters of a problem. The optimizer works on the unit
// cube [0, 1]^d; ToParams maps a point of it to parameter values (linear or
// logarithmic in each coordinate, rounded for integers) and FromParams
// back.
type Space []policy.Param

// Validate checks the declarations.
func (sp Space) Validate() error {
	if len(sp) == 0 {
		return fmt.Errorf("%w: the policy has no parameters to search", ErrInvalid)
	}
	for k, p := range sp {
		switch {
		case p.Name == "":
			return fmt.Errorf("%w: parameter %d has no name", ErrInvalid, k)
		case slices.ContainsFunc(sp[:k], func(q policy.Param) bool { return q.Name == p.Name }):
			return fmt.Errorf("%w: parameter %s declared twice", ErrInvalid, p.Name)
		case !(p.Min <= p.Max) || math.IsInf(p.Min, 0) || math.IsInf(p.Max, 0):
			return fmt.Errorf("%w: parameter %s: range [%v, %v] is not a finite interval", ErrInvalid, p.Name, p.Min, p.Max)
		case !(p.Min <= p.Default && p.Default <= p.Max):
			return fmt.Errorf("%w: parameter %s: default %v outside [%v, %v]", ErrInvalid, p.Name, p.Default, p.Min, p.Max)
		case p.Log && p.Min <= 0:
			return fmt.Errorf("%w: parameter %s: a log scale needs min > 0, got %v", ErrInvalid, p.Name, p.Min)
		}
	}
	return nil
}

// Names returns the parameter names in order.
func (sp Space) Names() []string {
	out := make([]string, len(sp))
	for k, p := range sp {
		out[k] = p.Name
	}
	return out
}

// Defaults returns the default values.
func (sp Space) Defaults() []float64 {
	out := make([]float64, len(sp))
	for k, p := range sp {
		out[k] = p.Default
	}
	return out
}

// ToParams maps u (clamped to [0, 1]^d) to parameter values.
func (sp Space) ToParams(u []float64) []float64 {
	x := make([]float64, len(sp))
	for k, p := range sp {
		t := min(max(u[k], 0), 1)
		if math.IsNaN(t) {
			t = 0
		}
		if p.Log {
			x[k] = math.Exp(math.Log(p.Min) + t*(math.Log(p.Max)-math.Log(p.Min)))
		} else {
			x[k] = p.Min + t*(p.Max-p.Min)
		}
		if p.Integer {
			x[k] = math.Round(x[k])
		}
		x[k] = min(max(x[k], p.Min), p.Max)
	}
	return x
}

// FromParams maps parameter values to the unit cube (a degenerate range
// maps to 0.5).
func (sp Space) FromParams(x []float64) []float64 {
	u := make([]float64, len(sp))
	for k, p := range sp {
		switch {
		case p.Max == p.Min:
			u[k] = 0.5
		case p.Log:
			u[k] = (math.Log(x[k]) - math.Log(p.Min)) / (math.Log(p.Max) - math.Log(p.Min))
		default:
			u[k] = (x[k] - p.Min) / (p.Max - p.Min)
		}
	}
	return u
}

// Map returns x keyed by parameter name.
func (sp Space) Map(x []float64) map[string]float64 {
	m := make(map[string]float64, len(sp))
	for k, p := range sp {
		m[p.Name] = x[k]
	}
	return m
}

// Restrict applies a --params specification "name=lo:hi,name=v,..." to the
// space: name=lo:hi searches the parameter on [lo, hi] (within its declared
// range), name=v fixes it at v. Parameters not named keep their declared
// range. The default of a restricted parameter is clamped into the new
// range. Errors name the item and say what is wrong.
func (sp Space) Restrict(spec string) (Space, error) {
	out := slices.Clone(sp)
	if strings.TrimSpace(spec) == "" {
		return out, nil
	}
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		name, rng, ok := strings.Cut(strings.TrimSpace(item), "=")
		name = policy.ParamName(strings.TrimSpace(name))
		if !ok || name == "" {
			return nil, fmt.Errorf("%w: --params item %q: want name=lo:hi or name=value", ErrInvalid, item)
		}
		k := slices.IndexFunc(out, func(p policy.Param) bool { return p.Name == name })
		if k < 0 {
			return nil, fmt.Errorf("%w: --params: unknown parameter %q (the policy has: %s)", ErrInvalid, name, strings.Join(sp.Names(), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: --params: parameter %s given twice", ErrInvalid, name)
		}
		seen[name] = true
		p := &out[k]
		loS, hiS, isRange := strings.Cut(rng, ":")
		if !isRange {
			hiS = loS
		}
		lo, err1 := strconv.ParseFloat(strings.TrimSpace(loS), 64)
		hi, err2 := strconv.ParseFloat(strings.TrimSpace(hiS), 64)
		switch {
		case err1 != nil || err2 != nil || math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0):
			return nil, fmt.Errorf("%w: --params %s=%s: bounds must be finite numbers", ErrInvalid, name, rng)
		case lo > hi:
			return nil, fmt.Errorf("%w: --params %s=%s: lower bound %v > upper bound %v", ErrInvalid, name, rng, lo, hi)
		case !p.Fixed && (lo < p.Min || hi > p.Max):
			// (A fit setting is pinned at its default in the space; the
			// policy checks a value given here against its declared range
			// when built.)
			return nil, fmt.Errorf("%w: --params %s=%s: outside the parameter's range [%v, %v]", ErrInvalid, name, rng, p.Min, p.Max)
		case p.Integer && (lo != math.Round(lo) || hi != math.Round(hi)):
			return nil, fmt.Errorf("%w: --params %s=%s: %s is an integer parameter", ErrInvalid, name, rng, name)
		}
		p.Min, p.Max = lo, hi
		p.Default = min(max(p.Default, lo), hi)
	}
	return out, nil
}

package models

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/optd/optd/internal/errkind"
)

// Sentinels of the domain types. Every validation error of a cluster, job,
// task or resource vector wraps one of them and reads
//
//	models: invalid cluster: nodes[2].capacity[1] = -4: negative
//
// (sentinel, field path, offending value, reason). Test with errors.Is.
var (
	ErrInvalidResources = errkind.New(errkind.Invalid, "models: invalid resources")
	ErrInvalidCluster   = errkind.New(errkind.Invalid, "models: invalid cluster")
	ErrInvalidJob       = errkind.New(errkind.Invalid, "models: invalid job")
	ErrInvalidTask      = errkind.New(errkind.Invalid, "models: invalid task")
)

// domainIssue is a validation failure before it is wrapped in a sentinel:
// the field path, its value and why it is rejected. Checks return it so that
// an enclosing value can prefix the path ("nodes[2]." + "capacity[1]").
type domainIssue struct {
	field  string
	value  any
	reason string
}

func newIssue(field string, value any, format string, args ...any) *domainIssue {
	return &domainIssue{field: field, value: value, reason: fmt.Sprintf(format, args...)}
}

// under prefixes the field path with the path of the enclosing value.
func (d *domainIssue) under(prefix string) *domainIssue {
	if d != nil {
		if d.field == "" {
			d.field = prefix
		} else if strings.HasPrefix(d.field, "[") {
			d.field = prefix + d.field
		} else {
			d.field = prefix + "." + d.field
		}
	}
	return d
}

// wrap returns the issue as an error wrapping sentinel, or nil.
func (d *domainIssue) wrap(sentinel error) error {
	if d == nil {
		return nil
	}
	return fmt.Errorf("%w: %s = %s: %s", sentinel, d.field, issueValue(d.value), d.reason)
}

// issueValue formats a value for an error message: strings quoted, floats
// in shortest form, everything else with %v.
func issueValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// Resource dimension names used by optd's scenarios (YARN's two schedulable
// resources).
const (
	ResourceMemoryMB = "memory_mb"
	ResourceVCores   = "vcores"
)

// ResourceNames names the dimensions of resource vectors, in order:
// Resources[p] is an amount of ResourceNames[p]. One cluster uses one
// ordering for every capacity and demand. An empty list means the cluster
// has no resource vectors (MRv1 typed slots only).
type ResourceNames []string

// MemoryVCores returns the usual YARN ordering {memory_mb, vcores}.
func MemoryVCores() ResourceNames { return ResourceNames{ResourceMemoryMB, ResourceVCores} }

// Validate checks that the names are non-empty and distinct.
func (n ResourceNames) Validate() error {
	return n.check().under("resources").wrap(ErrInvalidResources)
}

func (n ResourceNames) check() *domainIssue {
	for i, name := range n {
		if strings.TrimSpace(name) == "" {
			return newIssue(fmt.Sprintf("[%d]", i), name, "empty resource name")
		}
		for k := range i {
			if n[k] == name {
				return newIssue(fmt.Sprintf("[%d]", i), name, "duplicate resource name (also at index %d)", k)
			}
		}
	}
	return nil
}

// Index returns the position of name, or -1.
func (n ResourceNames) Index(name string) int {
	for i, v := range n {
		if v == name {
			return i
		}
	}
	return -1
}

// Resources is a vector of integer resource amounts (MB of memory, vcores,
// ...) over the dimensions of a ResourceNames ordering. Capacities and
// demands are non-negative; differences may be negative (an overcommitted
// node).
//
// Arithmetic on vectors of different lengths is a programmer error and
// panics; user input is checked by Validate, which bounds every amount by
// MaxResourceAmount. The arithmetic itself does not check for overflow.
type Resources []int64

// MaxResourceAmount is the largest amount Validate accepts in one dimension:
// 2^53, below which every integer is exact in float64 (shares and dot
// products are computed in float64). Real amounts are far smaller (a node of
// 10^6 MB).
const MaxResourceAmount = 1 << 53

// mustMatch panics when a and b have different dimensions.
func mustMatch(op string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("models: Resources.%s: dimension mismatch (%d vs %d)", op, a, b))
	}
}

// Add returns r + o.
func (r Resources) Add(o Resources) Resources {
	mustMatch("Add", len(r), len(o))
	s := make(Resources, len(r))
	for p := range r {
		s[p] = r[p] + o[p]
	}
	return s
}

// Sub returns r − o (possibly negative).
func (r Resources) Sub(o Resources) Resources {
	mustMatch("Sub", len(r), len(o))
	s := make(Resources, len(r))
	for p := range r {
		s[p] = r[p] - o[p]
	}
	return s
}

// Scale returns k·r, e.g. the demand of k identical tasks.
func (r Resources) Scale(k int64) Resources {
	s := make(Resources, len(r))
	for p := range r {
		s[p] = k * r[p]
	}
	return s
}

// Fits reports whether r ≤ capacity in every dimension.
func (r Resources) Fits(capacity Resources) bool {
	mustMatch("Fits", len(r), len(capacity))
	for p := range r {
		if r[p] > capacity[p] {
			return false
		}
	}
	return true
}

// DominantShare returns max_p r[p]/capacity[p], the share of its dominant
// resource in Dominant Resource Fairness (Ghodsi et al., NSDI'11; the DRF
// baseline of HaSTE, Yao et al., TCC'21). A dimension with capacity 0
// contributes 0 when r[p] = 0 and +Inf when r[p] > 0 (the demand can never
// be met). The zero-dimensional vector has share 0.
func (r Resources) DominantShare(capacity Resources) float64 {
	mustMatch("DominantShare", len(r), len(capacity))
	share := 0.0
	for p := range r {
		switch {
		case capacity[p] > 0:
			share = math.Max(share, float64(r[p])/float64(capacity[p]))
		case r[p] > 0:
			return math.Inf(1)
		}
	}
	return share
}

// Dot returns Σ_p weights[p]·r[p]: the value of a task in the initial task
// assignment knapsack (docs/formats.md#ita-instance; HaSTE, Yao et al., TCC'21, Algorithm 1)
// or a dot-product score (FFD-DP).
func (r Resources) Dot(weights []float64) float64 {
	mustMatch("Dot", len(r), len(weights))
	s := 0.0
	for p := range r {
		s += weights[p] * float64(r[p])
	}
	return s
}

// IsZero reports whether every amount is 0.
func (r Resources) IsZero() bool {
	for _, v := range r {
		if v != 0 {
			return false
		}
	}
	return true
}

// Equal reports whether r and o have the same dimensions and amounts.
func (r Resources) Equal(o Resources) bool {
	if len(r) != len(o) {
		return false
	}
	for p := range r {
		if r[p] != o[p] {
			return false
		}
	}
	return true
}

// Clone returns a copy of r (nil for nil).
func (r Resources) Clone() Resources {
	if r == nil {
		return nil
	}
	return append(Resources(nil), r...)
}

// String formats r as "[8192 8]".
func (r Resources) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for p, v := range r {
		if p > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(v, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// Named formats r with its dimension names, "memory_mb=8192 vcores=8". It
// panics if the lengths differ.
func (r Resources) Named(names ResourceNames) string {
	mustMatch("Named", len(r), len(names))
	parts := make([]string, len(r))
	for p, v := range r {
		parts[p] = names[p] + "=" + strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, " ")
}

// Validate checks that r has one amount per name and that none is negative.
func (r Resources) Validate(names ResourceNames) error {
	return r.check(names).under("resources").wrap(ErrInvalidResources)
}

func (r Resources) check(names ResourceNames) *domainIssue {
	if len(r) != len(names) {
		return newIssue("", r, "has %d dimensions, want %d %v", len(r), len(names), []string(names))
	}
	for p, v := range r {
		if v < 0 {
			return newIssue(fmt.Sprintf("[%d]", p), v, "negative %s", names[p])
		}
		if v > MaxResourceAmount {
			return newIssue(fmt.Sprintf("[%d]", p), v, "%s above 2^53", names[p])
		}
	}
	return nil
}

// ByName returns r as a map from dimension name to amount (nil if r is
// empty: no amounts at all), the form of APIs that name resources. It
// panics if r is not empty and the lengths differ.
func (r Resources) ByName(names ResourceNames) map[string]float64 {
	if len(r) == 0 {
		return nil
	}
	mustMatch("ByName", len(r), len(names))
	m := make(map[string]float64, len(r))
	for p, v := range r {
		m[names[p]] = float64(v)
	}
	return m
}

package solver

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/internal/strictjson"
)

// Size limits of an Instance. They keep every sum of capacities and values
// exactly representable in a float64 (2^53) and the search depth
// (nodes × task types) and memory bounded. Validate names the limit it hits.
const (
	// MaxNodes is the largest number of nodes.
	MaxNodes = 1000
	// MaxTaskTypes is the largest number of task types.
	MaxTaskTypes = 200
	// MaxResources is the largest number of resources k.
	MaxResources = 8
	// MaxQuantity is the largest capacity or demand of one resource (2^40).
	MaxQuantity int64 = 1 << 40
	// MaxCount is the largest number of tasks of one type.
	MaxCount = 1_000_000
	// MaxWeight is the largest resource weight.
	MaxWeight = 1e6
	// MaxIDLength is the longest node or task identifier, in bytes.
	MaxIDLength = 256
	// MaxInstanceBytes is the largest instance file DecodeInstance reads.
	MaxInstanceBytes = 16 << 20
)

// ErrInvalidInstance is wrapped by every error that Validate and
// DecodeInstance return for bad input.
var ErrInvalidInstance = errkind.New(errkind.Invalid, "solver: invalid instance")

// ValidationError says which field of an Instance is wrong, its value, and why.
type ValidationError struct {
	Field  string // JSON path, e.g. "tasks[2].demand[1]"
	Value  string // the offending value, formatted
	Reason string
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return "solver: invalid instance: " + e.Reason
	}
	if e.Value == "" {
		return fmt.Sprintf("solver: invalid instance: %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("solver: invalid instance: %s = %s: %s", e.Field, e.Value, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalidInstance) hold.
func (e *ValidationError) Unwrap() error { return ErrInvalidInstance }

func invalid(field string, value any, format string, args ...any) error {
	v := ""
	if value != nil {
		v = fmt.Sprint(value)
	}
	return &ValidationError{Field: field, Value: v, Reason: fmt.Sprintf(format, args...)}
}

// Instance is an Initial Task Assignment problem (docs/formats.md#ita-instance): choose how
// many tasks of each type to start on each node so that no node's capacity
// C[j,p] is exceeded in any resource p and the total value
// Σ_i Σ_j x_ij · Σ_p w_p·R[i,p] (the objective of the paper's §3.3) is maximal.
type Instance struct {
	// ResourceNames names the k resources ("memory_mb", "vcores"), in the
	// order of every capacity, demand and weight. Optional: the result's
	// utilization uses them, r0, r1, … when omitted (ResourceName).
	ResourceNames []string `json:"resource_names,omitempty"`
	// Weights w_p of the k resources. Omitted (nil) means w_p = 1 for every
	// resource.
	Weights []float64  `json:"weights,omitempty"`
	Nodes   []Node     `json:"nodes"`
	Tasks   []TaskType `json:"tasks"`
}

// Node is one worker node S_j with its capacity C[j,·] in integer units
// (e.g. MB and vcores).
type Node struct {
	ID       string  `json:"id"`
	Capacity []int64 `json:"capacity"`
}

// TaskType is Count identical tasks, each requesting Demand R[i,·].
type TaskType struct {
	ID     string  `json:"id"`
	Demand []int64 `json:"demand"`
	Count  int     `json:"count"`
}

// Resources returns k, the number of resources (0 for an empty instance).
func (in *Instance) Resources() int {
	switch {
	case len(in.ResourceNames) > 0:
		return len(in.ResourceNames)
	case len(in.Weights) > 0:
		return len(in.Weights)
	case len(in.Nodes) > 0:
		return len(in.Nodes[0].Capacity)
	case len(in.Tasks) > 0:
		return len(in.Tasks[0].Demand)
	}
	return 0
}

// Weight returns w_p, defaulting to 1 when Weights is omitted.
func (in *Instance) Weight(p int) float64 {
	if len(in.Weights) == 0 {
		return 1
	}
	return in.Weights[p]
}

// ResourceName returns the name of resource p: ResourceNames[p], or "r0",
// "r1", … when the instance names none.
func (in *Instance) ResourceName(p int) string {
	if len(in.ResourceNames) == 0 {
		return fmt.Sprintf("r%d", p)
	}
	return in.ResourceNames[p]
}

// Value returns the value of one task of type i, Σ_p w_p·R[i,p].
func (in *Instance) Value(i int) float64 {
	v := 0.0
	for p, d := range in.Tasks[i].Demand {
		v += in.Weight(p) * float64(d)
	}
	return v
}

// DecodeInstance reads one JSON instance strictly: unknown fields, trailing
// data and inputs larger than MaxInstanceBytes are errors. The result is
// validated.
func DecodeInstance(r io.Reader) (*Instance, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInstanceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("solver: read instance: %w", err)
	}
	if len(data) > MaxInstanceBytes {
		return nil, invalid("", nil, "the file is larger than the limit of %d bytes", MaxInstanceBytes)
	}
	var in Instance
	if err := strictjson.Decode(data, &in); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			return nil, &ValidationError{Field: se.Path, Value: se.Value, Reason: se.Reason}
		}
		return nil, fmt.Errorf("%w: %v", ErrInvalidInstance, err)
	}
	if err := in.Validate(); err != nil {
		return nil, err
	}
	return &in, nil
}

// Validate checks dimensions, signs, duplicate IDs and the size limits.
// Zero is valid everywhere a quantity is: a capacity of 0 (a node whose
// resource is used up), a demand of 0 (a resource the task does not use), a
// count of 0 (no pending task of the type); so is a task type that fits no
// node (the methods place none of it and say why in Result.Unplaced).
// Errors are *ValidationError values naming the field.
func (in *Instance) Validate() error {
	if len(in.Nodes) == 0 {
		return invalid("nodes", nil, "at least one node is required")
	}
	if len(in.Nodes) > MaxNodes {
		return invalid("nodes", len(in.Nodes), "more than the limit of %d nodes", MaxNodes)
	}
	if len(in.Tasks) == 0 {
		return invalid("tasks", nil, "at least one task type is required")
	}
	if len(in.Tasks) > MaxTaskTypes {
		return invalid("tasks", len(in.Tasks), "more than the limit of %d task types", MaxTaskTypes)
	}
	k := in.Resources()
	kField := "nodes[0].capacity" // the field that sets k (Resources)
	switch {
	case len(in.ResourceNames) > 0:
		kField = "resource_names"
	case len(in.Weights) > 0:
		kField = "weights"
	}
	if k == 0 {
		return invalid(kField, "[]", "at least one resource is required")
	}
	if k > MaxResources {
		return invalid(kField, k, "more than the limit of %d resources", MaxResources)
	}
	if err := in.validateResourceNames(k); err != nil {
		return err
	}
	if len(in.Weights) > 0 && len(in.Weights) != k {
		return invalid("weights", fmt.Sprint(in.Weights), "has %d entries, want k = %d resources (resource_names)", len(in.Weights), k)
	}
	for p, w := range in.Weights {
		f := fmt.Sprintf("weights[%d]", p)
		if math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 {
			return invalid(f, w, "a weight must be a positive finite number")
		}
		if w > MaxWeight {
			return invalid(f, w, "larger than the limit of %g", MaxWeight)
		}
	}
	checkVector := func(field string, v []int64) error {
		if len(v) != k {
			return invalid(field, fmt.Sprint(v), "has %d entries, want k = %d resources", len(v), k)
		}
		for p, q := range v {
			f := fmt.Sprintf("%s[%d]", field, p)
			if q < 0 {
				return invalid(f, q, "must be a non-negative integer")
			}
			if q > MaxQuantity {
				return invalid(f, q, "larger than the limit of %d", MaxQuantity)
			}
		}
		return nil
	}
	checkID := func(field, id string, seen map[string]int) error {
		if id == "" {
			return invalid(field, `""`, "an id is required")
		}
		if len(id) > MaxIDLength {
			return invalid(field, fmt.Sprintf("%.20q…", id), "longer than the limit of %d bytes", MaxIDLength)
		}
		if prev, ok := seen[id]; ok {
			return invalid(field, fmt.Sprintf("%q", id), "duplicate id (also at index %d)", prev)
		}
		return nil
	}
	nodeIDs := make(map[string]int, len(in.Nodes))
	for j, n := range in.Nodes {
		if err := checkID(fmt.Sprintf("nodes[%d].id", j), n.ID, nodeIDs); err != nil {
			return err
		}
		nodeIDs[n.ID] = j
		if err := checkVector(fmt.Sprintf("nodes[%d].capacity", j), n.Capacity); err != nil {
			return err
		}
	}
	taskIDs := make(map[string]int, len(in.Tasks))
	for i, t := range in.Tasks {
		if err := checkID(fmt.Sprintf("tasks[%d].id", i), t.ID, taskIDs); err != nil {
			return err
		}
		taskIDs[t.ID] = i
		if err := checkVector(fmt.Sprintf("tasks[%d].demand", i), t.Demand); err != nil {
			return err
		}
		if t.Count < 0 {
			return invalid(fmt.Sprintf("tasks[%d].count", i), t.Count, "must be a non-negative integer")
		}
		if t.Count > MaxCount {
			return invalid(fmt.Sprintf("tasks[%d].count", i), t.Count, "larger than the limit of %d tasks of a type", MaxCount)
		}
	}
	return nil
}

// validateResourceNames checks the optional names of the k resources:
// one per resource, non-empty, distinct, at most MaxIDLength bytes.
func (in *Instance) validateResourceNames(k int) error {
	if len(in.ResourceNames) == 0 {
		return nil
	}
	if len(in.ResourceNames) != k {
		return invalid("resource_names", fmt.Sprintf("%q", in.ResourceNames), "has %d entries, want k = %d resources", len(in.ResourceNames), k)
	}
	seen := make(map[string]int, k)
	for p, name := range in.ResourceNames {
		f := fmt.Sprintf("resource_names[%d]", p)
		switch {
		case name == "":
			return invalid(f, `""`, "a resource name is required")
		case len(name) > MaxIDLength:
			return invalid(f, fmt.Sprintf("%.20q…", name), "longer than the limit of %d bytes", MaxIDLength)
		}
		if prev, ok := seen[name]; ok {
			return invalid(f, fmt.Sprintf("%q", name), "duplicate resource name (also at index %d)", prev)
		}
		seen[name] = p
	}
	return nil
}

// fitsIn reports whether d ≤ c componentwise.
func fitsIn(d, c []int64) bool {
	for p := range d {
		if d[p] > c[p] {
			return false
		}
	}
	return true
}

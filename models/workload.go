package models

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// Conditional is one term of the decomposition of a workload by its number of
// reducers: P[R = R] and the law of the data per reducer Y = X/R given R.
//
// Thresholds condition on R (thresholds/doc.go explains why): any expectation over the
// workload is Σ_r Prob_r·E[g(Y, r) | R = r]; in particular
// E[X] = Σ_r Prob_r·r·E[Y | R = r].
type Conditional struct {
	R    int     // number of reducers
	Prob float64 // P[R = R] > 0
	Y    Dist    // law of Y = X/R given R = R
}

// JointPoint is one atom of a joint law of (X, R): P[X = Data, R = Reduces] = Prob.
type JointPoint struct {
	Data    float64 `json:"data"`
	Reduces int     `json:"reduces"`
	Prob    float64 `json:"prob"`
}

// Workload is the law of a job's (X, R) (docs/formats.md#workload): X the total
// intermediate data, R the number of reducers. It is either independent
// marginals (X ⊥ R, so Y | R = r is X/r) or a discrete joint law. It is
// immutable and safe for concurrent use.
type Workload struct {
	spec  workloadSpec
	conds []Conditional
	meanX float64

	// independent marginals
	data    Dist
	reduces ReduceDist

	// joint law: support (P > 0), sorted by (R, X), probabilities normalized
	points []JointPoint
	cum    []float64
}

// NewIndependentWorkload returns the workload with X ~ data and R ~ reduces,
// independent. Y | R = r is then the law of X/r: the same family with scaled
// parameters for the laws of this package, the same atoms divided by r for
// discrete and empirical data (shared, not copied).
func NewIndependentWorkload(data Dist, reduces ReduceDist) (*Workload, error) {
	if data == nil {
		return nil, invalid("data", nil, "missing")
	}
	if reduces.IsZero() {
		return nil, invalid("reduces", nil, "missing")
	}
	w := newIndependentWorkload(data, reduces)
	if m := w.meanX; !(m >= 0) || !isFinite(m) {
		return nil, invalid("data", nil, "mean %g is not a finite number ≥ 0", m)
	}
	if s, ok := data.(interface{ spec() *dataSpec }); ok {
		w.spec.Data = s.spec()
	}
	w.spec.Reduces = reduces.spec
	return w, nil
}

func newIndependentWorkload(data Dist, reduces ReduceDist) *Workload {
	w := &Workload{data: data, reduces: reduces, meanX: data.Mean()}
	base := data
	if a, ok := data.(Atomic); ok {
		if _, own := data.(transformer); !own {
			// An Atomic law from outside: build its tables once, not per R.
			base = &atomLaw{kind: a.Kind(), t: mergedAtomTable(a.Atoms()), s: 1}
		}
	}
	w.conds = make([]Conditional, len(reduces.r))
	for i, r := range reduces.r {
		w.conds[i] = Conditional{R: r, Prob: reduces.p[i], Y: divide(base, float64(r))}
	}
	return w
}

// NewJointWorkload returns the workload with P[X = Data, R = Reduces] = Prob for
// each point. Data finite and ≥ 0, Reduces in 1..MaxReducesLimit, Prob finite
// and ≥ 0 with Σ Prob = 1 within ProbSumTolerance (renormalized), no (Data,
// Reduces) pair twice. Y | R = r has atoms x/r with probabilities
// P[X = x, R = r]/P[R = r].
func NewJointWorkload(points []JointPoint) (*Workload, error) {
	return newJointWorkload("joint", points)
}

func newJointWorkload(path string, points []JointPoint) (*Workload, error) {
	if len(points) == 0 {
		return nil, invalid(path, nil, "must not be empty")
	}
	probs := make([]float64, len(points))
	for i, pt := range points {
		f := indexPath(path, i)
		if err := checkNonneg(joinPath(f, "data"), pt.Data); err != nil {
			return nil, err
		}
		if err := checkReduceCount(joinPath(f, "reduces"), pt.Reduces); err != nil {
			return nil, err
		}
		if err := checkNonneg(joinPath(f, "prob"), pt.Prob); err != nil {
			return nil, err
		}
		probs[i] = pt.Prob
	}
	total := sumFloats(probs)
	if err := checkSum(path, "prob", total); err != nil {
		return nil, err
	}
	byRX := func(i, j int) int {
		if c := points[i].Reduces - points[j].Reduces; c != 0 {
			return c
		}
		return cmp.Compare(points[i].Data, points[j].Data)
	}
	idx := sortedIndex(len(points), byRX)
	w := &Workload{spec: workloadSpec{Joint: slices.Clone(points)}}
	for k, i := range idx {
		if k > 0 && byRX(idx[k-1], i) == 0 {
			return nil, invalid(indexPath(path, i), nil, "duplicate of %s (data %s, reduces %d)",
				indexPath(path, idx[k-1]), formatValue(points[i].Data), points[i].Reduces)
		}
		if pt := points[i]; pt.Prob > 0 {
			pt.Prob /= total
			w.points = append(w.points, pt)
		}
	}
	w.cum = prefixSums(pointProbs(w.points))
	moments := make([]float64, len(w.points))
	for i, pt := range w.points {
		moments[i] = pt.Prob * pt.Data
	}
	w.meanX = sumFloats(moments)
	if !isFinite(w.meanX) {
		return nil, invalid(path, nil, "mean of data overflows float64")
	}
	// One conditional per R: points[lo:hi] share R = r and are sorted by X.
	for lo := 0; lo < len(w.points); {
		r := w.points[lo].Reduces
		hi := lo
		for hi < len(w.points) && w.points[hi].Reduces == r {
			hi++
		}
		group := w.points[lo:hi]
		pr := sumFloats(pointProbs(group))
		x := make([]float64, len(group))
		p := make([]float64, len(group))
		for i, pt := range group {
			x[i], p[i] = pt.Data, pt.Prob/pr
		}
		y := &atomLaw{kind: KindDiscrete, t: newAtomTable(x, p, nil), s: float64(r), div: true}
		w.conds = append(w.conds, Conditional{R: r, Prob: pr, Y: y})
		lo = hi
	}
	return w, nil
}

func pointProbs(points []JointPoint) []float64 {
	p := make([]float64, len(points))
	for i, pt := range points {
		p[i] = pt.Prob
	}
	return p
}

// Conditionals returns, for each R of positive probability in ascending order,
// P[R = r] and the law of Y = X/R given R = r. The probabilities sum to 1
// (within rounding). The slice is a fresh copy; the laws are shared.
func (w *Workload) Conditionals() []Conditional { return slices.Clone(w.conds) }

// MaxReduces returns the largest R of positive probability.
func (w *Workload) MaxReduces() int { return w.conds[len(w.conds)-1].R }

// MeanData returns E[X].
func (w *Workload) MeanData() float64 { return w.meanX }

// IsJoint reports whether the workload was given as a joint law.
func (w *Workload) IsJoint() bool { return w.points != nil }

// Marginals returns the laws of X and R of an independent workload; ok is false
// for a joint one.
func (w *Workload) Marginals() (data Dist, reduces ReduceDist, ok bool) {
	return w.data, w.reduces, w.points == nil
}

// Points returns the support of a joint workload (P > 0, normalized, sorted by
// R then X); nil for an independent one.
func (w *Workload) Points() []JointPoint { return slices.Clone(w.points) }

// Sample draws one job's (X, R).
func (w *Workload) Sample(rng *rand.Rand) (x float64, r int) {
	if w.points != nil {
		pt := w.points[searchCum(w.cum, rng.Float64()*w.cum[len(w.points)])]
		return pt.Data, pt.Reduces
	}
	return w.data.Sample(rng), w.reduces.Sample(rng)
}

// MarshalJSON returns the specification (docs/formats.md#workload) the workload was built
// from: as decoded (a sample "file" stays a file name, relative paths stay
// relative), or derived from the laws given to NewIndependentWorkload or
// NewJointWorkload. Decoding the result (with the same base directory) gives an
// equal workload. A data law defined outside this package has no JSON form.
func (w *Workload) MarshalJSON() ([]byte, error) {
	if w.spec.Data == nil && w.spec.Joint == nil {
		return nil, fmt.Errorf("models: workload data law of kind %q has no JSON form", w.data.Kind())
	}
	return json.Marshal(w.spec)
}

// DecodeWorkload decodes a workload (docs/formats.md#workload) strictly: unknown or duplicate
// fields, missing fields, wrong types and invalid values are *ValidationError
// (wrapping ErrInvalidWorkload) naming the JSON path of the field and its value.
// Relative empirical "file" paths are resolved against baseDir.
func DecodeWorkload(data []byte, baseDir string) (*Workload, error) {
	return decodeWorkload(data, baseDir, "")
}

// DecodeWorkloadField is DecodeWorkload for a workload embedded in a larger
// document at the JSON path field (e.g. "workload"): error paths start with it.
func DecodeWorkloadField(data []byte, baseDir, field string) (*Workload, error) {
	return decodeWorkload(data, baseDir, field)
}

// LoadWorkload reads and decodes the workload file at path; relative sample
// files are resolved against the directory of path. Errors start with path.
func LoadWorkload(path string) (*Workload, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: read workload: %w", err)
	}
	w, err := DecodeWorkload(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

package thresholds

import (
	"context"
	"fmt"
	"math"

	"github.com/optd/optd/models"
)

// distLaw evaluates λ(q) = q·P[Z < q] − E[Z·1{Z < q}] with the closed forms
// of a models.Dist (gamma, Pareto, or any law without a faster form here).
// Both terms use the same half-open convention, so λ is exact at atoms too.
type distLaw struct {
	d  models.Dist
	mu float64
}

func (l distLaw) lambda(q float64) float64 {
	ninf := math.Inf(-1)
	return q*l.d.ProbIn(ninf, q) - l.d.PartialMean(ninf, q)
}

func (l distLaw) lambdas(q, out []float64, s float64) { eachLambda(l, q, out, s) }

func (l distLaw) mean() float64 { return l.mu }

// stopLossLaw evaluates λ with the law's direct formula (models.StopLosser:
// uniform, exponential, lognormal), much cheaper than distLaw's two calls.
type stopLossLaw struct {
	d  models.StopLosser
	mu float64
}

func (l stopLossLaw) lambda(q float64) float64 { return l.d.StopLoss(q) }

func (l stopLossLaw) lambdas(q, out []float64, s float64) { eachLambda(l, q, out, s) }

func (l stopLossLaw) mean() float64 { return l.mu }

// lawOf returns the law the recursion uses for d: exact prefix sums over the
// atoms for atomic laws (discrete, empirical, joint), the direct stop-loss
// formula where the law has one (models.StopLosser), the Dist's closed forms
// otherwise. It rejects laws with mass below 0 or an infinite mean.
func lawOf(d models.Dist, what string) (law, error) {
	if a, ok := d.(models.Atomic); ok {
		values, probs := a.Atoms()
		l, err := newAtomicLaw(values, probs)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return l, nil
	}
	if p := d.ProbIn(math.Inf(-1), 0); p > 0 {
		return nil, fmt.Errorf("%w: P[%s < 0] = %v (data must be ≥ 0)", ErrWorkload, what, p)
	}
	mu := d.Mean()
	if math.IsNaN(mu) || math.IsInf(mu, 0) {
		return nil, fmt.Errorf("%w: E[%s] = %v (must be finite)", ErrWorkload, what, mu)
	}
	if sl, ok := d.(models.StopLosser); ok {
		return stopLossLaw{d: sl, mu: mu}, nil
	}
	return distLaw{d: d, mu: mu}, nil
}

// conditionalLaws returns the terms Σ_v P[R = v]·(law of Y | R = v) of w.
// For independent X and R the law of Y given R = v is that of X/v, so one
// law of X serves every v (scale v); a joint workload has one atomic law per
// v.
func conditionalLaws(w *models.Workload) ([]condLaw, error) {
	cs := w.Conditionals()
	conds := make([]condLaw, 0, len(cs))
	if data, _, ok := w.Marginals(); ok {
		x, err := lawOf(data, "X")
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			if c.Prob > 0 && c.R >= 1 {
				conds = append(conds, condLaw{r: c.R, prob: c.Prob, z: x, scale: float64(c.R)})
			}
		}
	} else {
		for _, c := range cs {
			if !(c.Prob > 0) || c.R < 1 {
				continue
			}
			y, err := lawOf(c.Y, fmt.Sprintf("X/R given R = %d", c.R))
			if err != nil {
				return nil, err
			}
			conds = append(conds, condLaw{r: c.R, prob: c.Prob, z: y, scale: 1})
		}
	}
	if len(conds) == 0 {
		return nil, fmt.Errorf("%w: no value of R with positive probability", ErrWorkload)
	}
	return conds, nil
}

// BuildTable computes the threshold table of Theorems 1-2 for K = jobs
// sequential jobs whose (X, R) are i.i.d. with the law of w, by the
// recursion selected in opts (the conditioned one by default; see
// ConditionalRecursion and buildTable for the derivation). Partial
// expectations are exact: closed forms for continuous laws, prefix sums for
// discrete and empirical ones. ctx is checked once per stage.
//
// Errors: ErrJobs for K < 1, ErrWorkload for a workload with negative data or
// an infinite mean, a *MemoryLimitError (ErrTooLarge) when TableBytes exceeds
// opts.MaxTableBytes, ErrNumerical if a threshold is not finite.
func BuildTable(ctx context.Context, w *models.Workload, jobs int, opts Options) (*Table, error) {
	if w == nil {
		return nil, fmt.Errorf("%w: nil workload", ErrWorkload)
	}
	if jobs < 1 {
		return nil, fmt.Errorf("%w: K = %d, must be at least 1", ErrJobs, jobs)
	}
	rb := w.MaxReduces()
	// Check the size before building the laws (an empirical law is O(n)).
	if rb >= 1 {
		if err := checkMemory(jobs, rb, opts.MaxTableBytes); err != nil {
			return nil, err
		}
	}
	conds, err := conditionalLaws(w)
	if err != nil {
		return nil, err
	}
	return buildTable(ctx, conds, jobs, rb, opts)
}

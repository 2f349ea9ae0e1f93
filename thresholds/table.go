package thresholds

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/optd/optd/internal/errkind"
)

// Sentinel errors. Errors returned by this package wrap one of them.
var (
	// ErrJobs: the number of jobs K is not a positive integer.
	ErrJobs = errkind.New(errkind.Invalid, "thresholds: invalid number of jobs")
	// ErrWorkload: the workload cannot be used (negative Y, infinite mean, …).
	ErrWorkload = errkind.New(errkind.Invalid, "thresholds: invalid workload")
	// ErrTooLarge: the table would need more memory than the configured limit
	// (the error is a *MemoryLimitError).
	ErrTooLarge = errkind.New(errkind.Invalid, "thresholds: table exceeds the memory limit")
	// ErrNumerical: a threshold came out NaN or infinite (a bug or an input
	// whose moments overflow float64).
	ErrNumerical = errkind.New(errkind.Internal, "thresholds: non-finite threshold")
	// ErrSlotCosts: slot costs are missing or not finite.
	ErrSlotCosts = errkind.New(errkind.Invalid, "thresholds: invalid slot costs")
	// ErrNoFreeSlots: fewer free slots than the job's reducers.
	ErrNoFreeSlots = errkind.New(errkind.Precondition, "thresholds: not enough free slots")
	// ErrJob: the arriving job (x, r) is invalid (x < 0, NaN, r < 1).
	ErrJob = errkind.New(errkind.Invalid, "thresholds: invalid job")
)

// DefaultMaxTableBytes is the memory limit used when Options.MaxTableBytes is
// zero: 256 MiB for the table plus the recursion's scratch buffers
// (see TableBytes). With max R = 10 this admits K ≤ 2,400 jobs; K = 500 with
// max R = 20 needs about 22 MiB.
const DefaultMaxTableBytes int64 = 256 << 20

// Recursion selects the recursion used to compute the thresholds.
type Recursion int

const (
	// ConditionalRecursion is the correct recursion, conditioned on R
	// (the default):
	//
	//	q_{i,n−1} = Σ_v P[R=v]·E[ clamp(Y, q_{i,n}, q_{i−v,n}) | R = v ]
	//
	// with q_{j,n} = +∞ for j ≤ 0 and 0 for j > (K−n)·r̄, which is the value
	// E[q_i·1{Y<q_i} + Y·1{q_i ≤ Y < q_{i−v}} + q_{i−v}·1{Y ≥ q_{i−v}} | R=v].
	ConditionalRecursion Recursion = iota
	// PaperRecursion is Theorem 2 exactly as printed in Tan et al.
	// (INFOCOM 2013): the same formula with the unconditional F(y) = P[X/R ≤ y]
	// in every term, Σ_v P[R=v]·E[clamp(Y', q_i, q_{i−v})] with Y' ~ F
	// independent of R. It is wrong whenever Y depends on R — which is the
	// case even for independent X and R, since Y = X/R — because the v copies
	// inserted by a job with R = v carry the law of Y given R = v, not F.
	// It is kept only as a comparator (tests and reports show its error).
	PaperRecursion
)

func (r Recursion) String() string {
	switch r {
	case ConditionalRecursion:
		return "conditional"
	case PaperRecursion:
		return "paper"
	default:
		return fmt.Sprintf("Recursion(%d)", int(r))
	}
}

// Options configures BuildTable. The zero value is the correct recursion
// with the default memory limit and up to two workers.
type Options struct {
	// Recursion: ConditionalRecursion (default) or PaperRecursion.
	Recursion Recursion
	// MaxTableBytes bounds TableBytes(K, r̄); 0 means
	// DefaultMaxTableBytes.
	MaxTableBytes int64
	// Workers is the number of goroutines over the values of R within a
	// stage, at most 2; 0 means min(GOMAXPROCS, 2); 1 disables concurrency.
	// The result does not depend on it (fixed accumulation groups).
	Workers int
	// Progress, if set, is called after each of the K stages of the
	// backward recursion with the stages done and K (from one goroutine).
	Progress func(done, total int)
}

// MemoryLimitError reports a table that would exceed Options.MaxTableBytes.
type MemoryLimitError struct {
	Jobs, MaxReduces int
	Bytes, Limit     int64
}

func (e *MemoryLimitError) Error() string {
	return fmt.Sprintf("thresholds: K = %d jobs with max_reduces = %d needs about %d MiB, above the memory limit of %d MiB",
		e.Jobs, e.MaxReduces, (e.Bytes+(1<<20)-1)>>20, e.Limit>>20)
}

func (e *MemoryLimitError) Unwrap() error { return ErrTooLarge }

// groups is the number of fixed accumulation groups of the recursion (and
// the largest useful number of workers).
const groups = 2

// TableBytes is the memory the recursion needs, in bytes, for K jobs and
// max R r̄: the table, r̄·K(K+1)/2 float64s, plus 2·groups scratch buffers of
// K·r̄ float64s. It is computed in float64 so that it cannot overflow.
func TableBytes(jobs, maxReduces int) float64 {
	k, r := float64(jobs), float64(maxReduces)
	return 8 * (r*k*(k+1)/2 + 2*groups*k*r)
}

// checkMemory returns a *MemoryLimitError when TableBytes(jobs, rb) exceeds
// limit (0 means DefaultMaxTableBytes).
func checkMemory(jobs, rb int, limit int64) error {
	if limit == 0 {
		limit = DefaultMaxTableBytes
	}
	b := TableBytes(jobs, rb)
	if b <= float64(limit) {
		return nil
	}
	bytes := int64(math.MaxInt64)
	if b < math.MaxInt64 {
		bytes = int64(b)
	}
	return &MemoryLimitError{Jobs: jobs, MaxReduces: rb, Bytes: bytes, Limit: limit}
}

// Table is the solution of Theorems 1-2 for K sequential jobs.
//
// Stages[i-1] is q_{·,i}: the thresholds seen by job i, i.e. the expected Y
// that jobs i+1..K, placed optimally, put on the j-th cheapest of the slots
// left free after job i is placed (0 where no job uses the slot); its length
// is (K−i)·r̄ and it is non-increasing. CostCoefficients is q_{·,0}: the
// expected Y placed on the j-th cheapest slot of an empty cluster over the
// whole run (length K·r̄), so the optimal expected total cost is
// Σ_j H_(j)·c_j for slot costs sorted ascending (Theorem 1, eq. (5)).
type Table struct {
	Jobs             int
	MaxReduces       int
	Recursion        Recursion
	Stages           [][]float64
	CostCoefficients []float64
	// MonotoneRepair is the largest amount by which a computed threshold
	// exceeded its predecessor before being clamped to it (rounding only; the
	// exact values are non-increasing). Reported so that tests can bound it.
	MonotoneRepair float64
}

// ExpectedCost is the optimal expected total fetching cost Σ_j H_(j)·c_j of
// the K jobs on slots with the given fetch costs (any order, at least
// K·r̄ of them; only the K·r̄ cheapest matter).
func (t *Table) ExpectedCost(slotCosts []float64) (float64, error) {
	n := len(t.CostCoefficients)
	if len(slotCosts) < n {
		return 0, fmt.Errorf("%w: got %d slot costs, need at least K·max_reduces = %d·%d = %d",
			ErrSlotCosts, len(slotCosts), t.Jobs, t.MaxReduces, n)
	}
	for i, h := range slotCosts {
		if math.IsNaN(h) || math.IsInf(h, 0) {
			return 0, fmt.Errorf("%w: slot cost %d is %v", ErrSlotCosts, i+1, h)
		}
	}
	h := slices.Clone(slotCosts)
	slices.Sort(h)
	var s float64
	for j, c := range t.CostCoefficients {
		s += h[j] * c
	}
	return s, nil
}

// buildTable runs the backward recursion of Theorem 2 (in the conditioned
// form, or as printed) from q_{·,K} = () down to q_{·,0}.
//
// Stage n → n−1. Job n with R = v and Y = y inserts v copies of y into the
// non-increasing list q = q_{·,n} at positions c+1..c+v, c = #{j : q_j > y}
// (Hardy's lemma, eq. (7): the v values are merged in sorted order), so the
// value at position i is q_i if y < q_i, y if q_i ≤ y < q_{i−v}, and q_{i−v}
// if y ≥ q_{i−v}, i.e. clamp(y, q_i, q_{i−v}). With λ(q) = E[(q−Y)⁺ | v]:
//
//	i ≤ v:  E[max(Y, q_i)]              = E[Y|v] + λ(q_i)
//	i > v:  E[clamp(Y, q_i, q_{i−v})]   = q_{i−v} − λ(q_{i−v}) + λ(q_i)
//
// so each distinct threshold costs one λ evaluation per v. Padding positions
// (q = 0) have λ = 0 and positions beyond P+v (P = number of positive
// thresholds) are 0, so they are skipped. Every term is a difference of
// quantities bounded by q_{i−v} or E[Y|v], so the absolute rounding error of
// q_{i,n−1} is a few ulps of max(q_{i−v}, E[Y]) without complementary (upper
// tail) forms; each value is also clamped to the interval it provably lies
// in ([q_i, q_{i−v}], or ≥ max(E[Y], q_i)), which keeps the table ≥ 0 even
// for subnormal data. The tests check the table against an exhaustive
// optimum to 1e-9. ctx is checked before each value of R.
func buildTable(ctx context.Context, conds []condLaw, jobs, maxReduces int, opts Options) (*Table, error) {
	if jobs < 1 {
		return nil, fmt.Errorf("%w: K = %d, must be at least 1", ErrJobs, jobs)
	}
	if maxReduces < 1 || len(conds) == 0 {
		return nil, fmt.Errorf("%w: max_reduces = %d with %d values of R", ErrWorkload, maxReduces, len(conds))
	}
	if err := checkMemory(jobs, maxReduces, opts.MaxTableBytes); err != nil {
		return nil, err
	}
	for _, c := range conds {
		if c.r < 1 || c.r > maxReduces {
			return nil, fmt.Errorf("%w: R = %d outside 1..max_reduces = %d", ErrWorkload, c.r, maxReduces)
		}
		if mu := c.meanY(); math.IsNaN(mu) || math.IsInf(mu, 0) || mu < 0 || !(c.scale > 0) {
			return nil, fmt.Errorf("%w: E[X/R | R = %d] = %v (must be finite and ≥ 0)", ErrWorkload, c.r, mu)
		}
	}

	terms := conds
	if opts.Recursion == PaperRecursion {
		mix := newMixtureLaw(conds)
		terms = make([]condLaw, len(conds))
		for i, c := range conds {
			terms[i] = condLaw{r: c.r, prob: c.prob, z: mix, scale: 1}
		}
	} else if opts.Recursion != ConditionalRecursion {
		return nil, fmt.Errorf("thresholds: unknown recursion %v", opts.Recursion)
	}

	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, groups, len(terms)))

	// One backing array for the whole table: stage n (0..K) starts at
	// off(n) = r̄·Σ_{m<n}(K−m) and has length (K−n)·r̄.
	K, rb := jobs, maxReduces
	backing := make([]float64, rb*K*(K+1)/2)
	stages := make([][]float64, K+1)
	off := 0
	for n := 0; n <= K; n++ {
		l := (K - n) * rb
		stages[n] = backing[off : off+l : off+l]
		off += l
	}

	// The terms are split into `groups` fixed interleaved groups (t mod
	// groups); each group accumulates Σ P[R=v]·value_v in v order into its
	// own buffer and the groups are added in order, so the result does not
	// depend on the number of workers.
	full := K * rb
	var acc, lams [groups][]float64
	for g := range groups {
		acc[g] = make([]float64, full)
		lams[g] = make([]float64, full)
	}

	repair := 0.0
	positive := 0 // P: number of positive entries of q_{·,n} (a prefix)
	for n := K; n >= 1; n-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q := stages[n][:positive]
		out := stages[n-1]
		group := func(g int) {
			sum, lam := acc[g], lams[g]
			clear(sum[:min(len(q)+rb, len(out))])
			for t := g; t < len(terms); t += groups {
				if ctx.Err() != nil {
					return // reported after the stage
				}
				term := terms[t]
				v, p := term.r, term.prob
				// λ of Y | R = v at each positive threshold.
				term.z.lambdas(q, lam[:len(q)], term.scale)
				mu := term.meanY()
				w := min(len(q)+v, len(out))
				for i := range w { // 0-based position i ↔ the paper's i+1
					var qi float64 // q_i (0 beyond the positive prefix)
					if i < len(q) {
						qi = q[i]
					}
					var val float64
					if i < v {
						// E[max(Y, q_i)] = E[Y] + λ(q_i) ≥ max(E[Y], q_i)
						val = mu
						if i < len(q) {
							val += lam[i]
						}
						val = max(val, qi, mu)
					} else {
						// E[clamp(Y, q_i, q_{i−v})] = q_{i−v} − λ(q_{i−v}) + λ(q_i) ∈ [q_i, q_{i−v}]
						val = q[i-v] - lam[i-v]
						if i < len(q) {
							val += lam[i]
						}
						val = min(max(val, qi), q[i-v])
					}
					sum[i] += p * val
				}
			}
		}
		if workers == 1 {
			for g := range groups {
				group(g)
			}
		} else {
			var wg sync.WaitGroup
			for g := range groups {
				wg.Go(func() { group(g) })
			}
			wg.Wait()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		w := min(len(q)+rb, len(out))
		for i := range w {
			out[i] = acc[0][i]
			for g := 1; g < groups; g++ {
				out[i] += acc[g][i]
			}
		}
		if opts.Progress != nil {
			opts.Progress(K-n+1, K)
		}
		positive = 0
		for i, x := range out {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("%w: q[%d] of stage %d is %v", ErrNumerical, i+1, n-1, x)
			}
			if i > 0 && x > out[i-1] {
				repair = max(repair, x-out[i-1])
				out[i] = out[i-1]
				x = out[i]
			}
			if x > 0 {
				positive = i + 1
			}
		}
	}
	return &Table{
		Jobs:             K,
		MaxReduces:       rb,
		Recursion:        opts.Recursion,
		Stages:           stages[1:],
		CostCoefficients: stages[0],
		MonotoneRepair:   repair,
	}, nil
}

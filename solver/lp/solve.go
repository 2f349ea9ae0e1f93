package lp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/optd/optd/internal/errkind"
)

// Algorithm selects the simplex variant.
type Algorithm int

const (
	// Auto is the dual simplex, Clp's usual choice (and a good one after bound
	// changes, which keep the previous basis dual feasible).
	Auto Algorithm = iota
	// Primal is the primal simplex (a good choice after objective changes, which
	// keep the previous basis primal feasible).
	Primal
	// Dual is the dual simplex.
	Dual
)

// String returns "auto", "primal" or "dual".
func (a Algorithm) String() string {
	switch a {
	case Auto:
		return "auto"
	case Primal:
		return "primal"
	case Dual:
		return "dual"
	default:
		return fmt.Sprintf("Algorithm(%d)", int(a))
	}
}

// Options control one solve.
type Options struct {
	// TimeLimit bounds the wall-clock time of the solve; 0 means none. A deadline on
	// the context is honoured as well, whichever comes first.
	TimeLimit time.Duration
	// Algorithm is the simplex variant; Auto is the dual simplex.
	Algorithm Algorithm

	// chunkIterations > 0 caps the first Clp call at that many iterations and each
	// later one at twice the previous cap, the solve continuing from the current
	// basis until done; tests use it to check that restarting does not change
	// results. 0: no cap.
	chunkIterations int
}

func (o Options) validate() error {
	if o.TimeLimit < 0 {
		return inputErr("Options.TimeLimit", -1, "%v is negative", o.TimeLimit)
	}
	if o.Algorithm < Auto || o.Algorithm > Dual {
		return inputErr("Options.Algorithm", -1, "%d is not Auto, Primal or Dual", int(o.Algorithm))
	}
	return nil
}

// Solution is an optimal primal-dual pair.
//
// With d = c − Aᵀy for both senses, RowDuals y and ReducedCosts d are the
// sensitivities of the optimal objective to the row and column bounds that are
// active: yᵢ = ∂(objective)/∂(active bound of row i) and dⱼ = ∂(objective)/∂(active
// bound of column j). Dual feasibility then reads
//
//	Minimize: yᵢ ≥ 0 if row i is at RowLower, yᵢ ≤ 0 at RowUpper, yᵢ = 0 if inactive;
//	          dⱼ ≥ 0 if xⱼ is at ColLower, dⱼ ≤ 0 at ColUpper, dⱼ = 0 if basic;
//	Maximize: all the signs reversed;
//
// (free rows and columns have zero duals; an equality row or fixed column may have
// either sign) and strong duality reads
//
//	c·x = Σᵢ yᵢ·(active bound of row i) + Σⱼ dⱼ·(active bound of column j),
//
// the sums running over the nonzero duals, which is cᵀx = yᵀ(Ax) + dᵀx evaluated at
// complementary slackness. x and y come from Clp; Objective, RowActivity and
// ReducedCosts are computed from them and the problem data by their definitions.
//
// When the optimal face is unbounded (some free or one-sided variables can move
// along a direction of zero cost), x is one optimal point of ordinary magnitude: the
// package moves variables that Clp's dual simplex left at its artificial bounds
// (±1e10) back to a finite bound or zero and re-optimizes.
type Solution struct {
	Objective    float64   // c·x
	Primal       []float64 // x, length n
	RowActivity  []float64 // A x, length m
	RowDuals     []float64 // y, length m
	ReducedCosts []float64 // d = c − Aᵀy, length n
	Iterations   int       // simplex iterations over all Clp calls of this solve
}

// Sentinel errors of Solve. Context cancellation is reported as an error wrapping
// ctx.Err(); a context deadline as one wrapping both ErrTimeLimit and
// context.DeadlineExceeded.
var (
	ErrInfeasible = errkind.New(errkind.Precondition, "lp: infeasible")         // primal infeasible
	ErrUnbounded  = errkind.New(errkind.Internal, "lp: unbounded")              // primal feasible and unbounded (dual infeasible)
	ErrTimeLimit  = errkind.New(errkind.Internal, "lp: time limit reached")     // Options.TimeLimit or the context deadline
	ErrNumerical  = errkind.New(errkind.Internal, "lp: numerical difficulties") // no reliable answer from either simplex, scaled or not
	ErrClosed     = errkind.New(errkind.Internal, "lp: model used after Close") // Model.Solve after Model.Close
	errNoProgress = errors.New("lp: simplex stopped without progress")
)

// Solve builds p in Clp, solves it, frees it and returns the optimal solution, or a
// nil Solution and an error: an *InputError if p or opts is malformed, ErrInfeasible,
// ErrUnbounded, ErrTimeLimit, ErrNumerical, or a wrapped context error.
func Solve(ctx context.Context, p *Problem, opts Options) (*Solution, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(ctx)
	}
	m, err := NewModel(p)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Solve(ctx, opts)
}

// Model is a problem loaded into Clp, kept between solves so that a re-solve after
// changing bounds or objective coefficients starts from the previous optimal basis.
//
// A Model owns C memory: call Close when done (a runtime cleanup frees a forgotten
// Model eventually, but only as a backstop). Its methods serialize on an internal
// mutex, so sharing one Model between goroutines is safe but gains nothing; separate
// Models are independent and may be solved concurrently.
type Model struct {
	mu     sync.Mutex
	handle modelHandle

	obj, colLower, colUpper []float64 // Go copies of what Clp holds
	rowLower, rowUpper      []float64

	colStart, rowIndex []int // the matrix A, as in Problem (colStart has n+1 entries)
	value              []float64

	objDirty, colDirty, rowDirty bool
}

// NewModel validates p and copies it into a new Clp model.
func NewModel(p *Problem) (*Model, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	m := &Model{
		obj:      append([]float64(nil), p.Obj...),
		colLower: append([]float64(nil), p.ColLower...),
		colUpper: append([]float64(nil), p.ColUpper...),
		rowLower: append([]float64(nil), p.RowLower...),
		rowUpper: append([]float64(nil), p.RowUpper...),
		colStart: append([]int(nil), p.ColStart...),
		rowIndex: append([]int(nil), p.RowIndex...),
		value:    append([]float64(nil), p.Value...),
	}
	if len(m.colStart) == 0 {
		m.colStart = []int{0}
	}
	m.handle = newHandle(m, clpNew(p))
	return m, nil
}

// Close frees the Clp model. It is idempotent; Solve after Close returns ErrClosed.
func (m *Model) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.handle.free()
}

// NumRows returns the number of rows.
func (m *Model) NumRows() int { return len(m.rowLower) }

// NumCols returns the number of columns.
func (m *Model) NumCols() int { return len(m.obj) }

// SetColBounds sets lo ≤ xⱼ ≤ hi for the next Solve. It panics if j is out of range;
// invalid bounds (NaN, lo > hi, ...) make the next Solve return an *InputError.
func (m *Model) SetColBounds(j int, lo, hi float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.colLower[j], m.colUpper[j] = lo, hi
	m.colDirty = true
}

// SetRowBounds sets lo ≤ aᵢ·x ≤ hi for the next Solve. It panics if i is out of
// range; invalid bounds make the next Solve return an *InputError.
func (m *Model) SetRowBounds(i int, lo, hi float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rowLower[i], m.rowUpper[i] = lo, hi
	m.rowDirty = true
}

// SetObj sets the objective coefficient cⱼ for the next Solve. It panics if j is out
// of range; a c that is not finite with magnitude below MaxMagnitude makes the next
// Solve return an *InputError.
func (m *Model) SetObj(j int, c float64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.obj[j] = c
	m.objDirty = true
}

// Solve solves the model from its current basis (the previous optimum after a first
// solve) and returns the optimal solution or a nil Solution and an error as
// documented on the package-level Solve.
func (m *Model) Solve(ctx context.Context, opts Options) (*Solution, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	ptr := m.handle.ptr
	if ptr == nil {
		return nil, ErrClosed
	}
	if err := m.push(ptr); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, ctxError(ctx)
	}
	if m.NumCols() == 0 {
		if err := checkNoColumns(m.rowLower, m.rowUpper); err != nil {
			return nil, err
		}
		return m.solution([]float64{}, make([]float64, m.NumRows())), nil
	}
	r := &run{ptr: ptr, ctx: ctx, opts: opts, obj: m.obj, m: m.NumRows(), n: m.NumCols()}
	if opts.TimeLimit > 0 {
		r.deadline = time.Now().Add(opts.TimeLimit)
	}
	stop := r.watch()
	defer stop()
	if err := r.solve(); err != nil {
		return nil, err
	}
	x, y := clpPrimalDual(ptr, m.NumRows(), m.NumCols())
	sol := m.solution(x, y)
	sol.Iterations = r.iterations
	return sol, nil
}

// solution completes x and y with Objective = c·x, RowActivity = A x and
// ReducedCosts = c − Aᵀy computed here from the model's data. (Clp's own row
// activities and reduced costs are wrong when the matrix has no nonzeros: it skips
// the simplex, leaves the activities at their initial values and reports the
// reduced costs of a maximization with the wrong sign.)
func (m *Model) solution(x, y []float64) *Solution {
	s := &Solution{
		Primal:       x,
		RowDuals:     y,
		RowActivity:  make([]float64, len(y)),
		ReducedCosts: append([]float64(nil), m.obj...),
	}
	for j, xj := range x {
		s.Objective += m.obj[j] * xj
		for k := m.colStart[j]; k < m.colStart[j+1]; k++ {
			i, a := m.rowIndex[k], m.value[k]
			s.RowActivity[i] += a * xj
			s.ReducedCosts[j] -= a * y[i]
		}
	}
	return s
}

// primalTolerance is Clp's default primal feasibility tolerance.
const primalTolerance = 1e-7

// checkNoColumns decides a problem without columns, which Clp does not solve
// properly (it reports optimality without computing row activities): A x = 0, so the
// problem is feasible exactly when every row admits 0 (up to Clp's primal
// tolerance), and then the objective and all duals are 0.
func checkNoColumns(rowLower, rowUpper []float64) error {
	for i := range rowLower {
		if rowLower[i] > primalTolerance || rowUpper[i] < -primalTolerance {
			return ErrInfeasible
		}
	}
	return nil
}

// push validates changed data and copies it into Clp.
func (m *Model) push(ptr unsafe.Pointer) error {
	if m.objDirty {
		if err := checkFinite("Obj", m.obj); err != nil {
			return err
		}
		clpChgObj(ptr, m.obj)
		m.objDirty = false
	}
	if m.colDirty {
		if err := checkBounds("ColLower", "ColUpper", m.colLower, m.colUpper); err != nil {
			return err
		}
		clpChgColBounds(ptr, m.colLower, m.colUpper)
		m.colDirty = false
	}
	if m.rowDirty {
		if err := checkBounds("RowLower", "RowUpper", m.rowLower, m.rowUpper); err != nil {
			return err
		}
		clpChgRowBounds(ptr, m.rowLower, m.rowUpper)
		m.rowDirty = false
	}
	return nil
}

// run is one Model.Solve: it drives Clp calls and turns statuses into errors.
type run struct {
	ptr        unsafe.Pointer
	ctx        context.Context
	opts       Options
	deadline   time.Time // from Options.TimeLimit; zero: none
	obj        []float64 // the model's objective, restored after a feasibility check
	m, n       int       // rows, columns
	iterations int
}

// watch starts a goroutine that asks Clp to stop as soon as the context is done or
// the deadline passes, and returns the function that ends it. Clp's own time limit
// is CPU time of the whole process, so it is not used for Options.TimeLimit.
func (r *run) watch() (stop func()) {
	if r.ctx.Done() == nil && r.deadline.IsZero() {
		return func() {}
	}
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		var expired <-chan time.Time
		if !r.deadline.IsZero() {
			t := time.NewTimer(time.Until(r.deadline))
			defer t.Stop()
			expired = t.C
		}
		select {
		case <-done:
			return
		case <-r.ctx.Done():
		case <-expired:
		}
		clpRequestStop(r.ptr)
	}()
	return func() {
		close(done)
		<-exited
	}
}

// interrupted reports why the solve must stop, or nil.
func (r *run) interrupted() error {
	if r.ctx.Err() != nil {
		return ctxError(r.ctx)
	}
	if !r.deadline.IsZero() && !time.Now().Before(r.deadline) {
		return fmt.Errorf("%w (Options.TimeLimit %v)", ErrTimeLimit, r.opts.TimeLimit)
	}
	return nil
}

func ctxError(ctx context.Context) error {
	err := ctx.Err()
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeLimit, err)
	}
	return fmt.Errorf("lp: solve interrupted: %w", err)
}

// simplex runs alg from the current basis until Clp reports anything but "stopped",
// continuing from the current basis after stops that the watcher did not request
// (the iteration cap of Options.chunkIterations). It returns Clp's final status.
//
// A stop request from the watcher can only be issued after the context is done or
// the deadline has passed, and the limit is cleared before interrupted() is
// consulted, so a request is never lost between two calls.
func (r *run) simplex(alg Algorithm) (status, secondary int, err error) {
	maxIter := math.MaxInt32
	if r.opts.chunkIterations > 0 {
		maxIter = r.opts.chunkIterations
	}
	idle := 0
	for {
		clpClearStop(r.ptr)
		if err := r.interrupted(); err != nil {
			return 0, 0, err
		}
		status, secondary, it := clpRun(r.ptr, alg, maxIter)
		r.iterations += it
		if status != clpStopped {
			return status, secondary, nil
		}
		if err := r.interrupted(); err != nil {
			return 0, 0, err
		}
		if it > 0 {
			idle = 0
		} else if idle++; idle >= 3 {
			return 0, 0, errNoProgress
		}
		// Restarting loses Clp's pivoting state and can even make the primal simplex
		// cycle when restarted every iteration; doubling the cap bounds the number of
		// restarts by log₂ of the iterations an uninterrupted call needs.
		maxIter = int(min(2*int64(maxIter), math.MaxInt32))
	}
}

// solve runs the requested algorithm and classifies the outcome. When Clp's answer
// holds for its scaled copy of the problem only (the unscaled solution violates
// constraints, as happens with coefficients spanning many orders of magnitude), it
// solves once more without scaling.
func (r *run) solve() error {
	alg := r.opts.Algorithm
	if alg == Auto {
		alg = Dual
	}
	err := r.solveWith(alg)
	if !errors.Is(err, errScaledOnly) {
		return err
	}
	saved := clpScaling(r.ptr)
	clpSetScaling(r.ptr, 0)
	defer clpSetScaling(r.ptr, saved)
	if err := r.solveWith(Primal); !errors.Is(err, errScaledOnly) {
		return err
	}
	return fmt.Errorf("%w: the solution violates the problem beyond Clp's tolerances", ErrNumerical)
}

// errScaledOnly reports a solution that is optimal for Clp's scaled problem but not
// for the problem itself.
var errScaledOnly = errors.New("lp: optimal for the scaled problem only")

// solveWith runs alg and classifies the outcome.
func (r *run) solveWith(alg Algorithm) error {
	status, secondary, err := r.simplex(alg)
	if errors.Is(err, errNoProgress) || (err == nil && status != clpOptimal && status != clpPrimalInfeasible && status != clpDualInfeasible) {
		// Clp stopped on errors: try once more with the other algorithm.
		alg = other(alg)
		status, secondary, err = r.simplex(alg)
		if errors.Is(err, errNoProgress) {
			return fmt.Errorf("%w: %v", ErrNumerical, err)
		}
	}
	if err != nil {
		return err
	}
	switch status {
	case clpOptimal:
		// Clean up with the primal simplex when the solution is optimal for the scaled
		// problem only, or has variables parked at the dual's artificial bounds.
		if moved := clpResetFarNonbasics(r.ptr, r.m, r.n); moved || scaledOnly(secondary) {
			status, secondary, err = r.simplex(Primal)
			if err != nil {
				return err
			}
			if status != clpOptimal {
				return fmt.Errorf("%w: Clp status %d after cleanup", errScaledOnly, status)
			}
		}
		if scaledOnly(secondary) {
			return errScaledOnly
		}
		return nil
	case clpPrimalInfeasible:
		return ErrInfeasible
	case clpDualInfeasible:
		return r.classifyDualInfeasible()
	default:
		return fmt.Errorf("%w: Clp status %d (secondary %d) with the %v simplex", ErrNumerical, status, secondary, alg)
	}
}

// scaledOnly reports Clp's secondary statuses 2-4: optimal for the scaled problem,
// with primal and/or dual infeasibilities in the unscaled one.
func scaledOnly(secondary int) bool { return secondary >= 2 && secondary <= 4 }

func other(alg Algorithm) Algorithm {
	if alg == Primal {
		return Dual
	}
	return Primal
}

// classifyDualInfeasible decides between "unbounded" and "infeasible" when Clp finds
// the dual infeasible, which happens when the primal is unbounded and also when
// primal and dual are both infeasible: it solves the feasibility problem (zero
// objective) and restores the objective.
func (r *run) classifyDualInfeasible() error {
	clpChgObj(r.ptr, make([]float64, len(r.obj)))
	status, _, err := r.simplex(Dual)
	clpChgObj(r.ptr, r.obj)
	switch {
	case err != nil:
		return err
	case status == clpOptimal:
		return ErrUnbounded
	case status == clpPrimalInfeasible:
		return ErrInfeasible
	default:
		return fmt.Errorf("%w: Clp status %d on the feasibility problem", ErrNumerical, status)
	}
}

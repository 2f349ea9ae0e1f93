// Package lp solves linear programs with COIN-OR Clp through its C API
// (coin/Clp_C_Interface.h, Debian coinor-libclp-dev, linked with
// `#cgo pkg-config: clp`). It is optd's only cgo package.
//
// # Problem
//
// A Problem is
//
//	minimize or maximize  c·x
//	subject to            RowLower ≤ A x ≤ RowUpper
//	                      ColLower ≤ x   ≤ ColUpper
//
// with A in compressed sparse column form and infinite bounds written math.Inf(±1).
// Equality rows, ranged rows, fixed and free columns are all expressed through the
// bounds. Objective coefficients, matrix values and finite bounds must be below
// MaxMagnitude (1e20) in magnitude: beyond it Clp silently treats bounds as infinite,
// and the Debian build aborts the process on huge scaled objectives. Problem.Validate
// reports malformed input as an *InputError naming the field and index.
//
// Solve loads a Problem into Clp, solves it and frees it. A Model keeps it loaded so
// that SetColBounds, SetRowBounds and SetObj followed by Model.Solve re-solve from the
// previous optimal basis (a warm start).
//
// # Duals and their signs
//
// RowDuals y and ReducedCosts d satisfy d = c − Aᵀy for both senses and are the
// sensitivities of the optimal objective to the active bounds:
// yᵢ = ∂(c·x*)/∂(active bound of row i), dⱼ = ∂(c·x*)/∂(active bound of column j).
// Hence for Minimize yᵢ ≥ 0 (dⱼ ≥ 0) when the row (column) is at its lower bound and
// yᵢ ≤ 0 (dⱼ ≤ 0) at its upper bound; for Maximize the signs are reversed. Strong
// duality holds in the form
//
//	c·x* = Σᵢ yᵢ·(active bound of row i) + Σⱼ dⱼ·(active bound of column j),
//
// where every nonzero dual multiplies the bound its sign selects (complementary
// slackness). These are Clp's conventions (Clp_getRowPrice); the package computes d
// from y itself, because Clp reports d with the wrong sign for maximizations whose
// matrix has no nonzeros.
//
// # Algorithm and status
//
// Solve runs Clp's simplex without presolve: the dual simplex unless Options ask for
// the primal. ErrInfeasible means primal infeasible. When Clp finds the dual
// infeasible, the package solves the feasibility problem (zero objective) to tell
// ErrUnbounded (primal feasible, objective unbounded) from ErrInfeasible (primal and
// dual both infeasible). If Clp stops on numerical errors it retries once with the
// other simplex; if Clp's solution is optimal only for its internally scaled problem
// it re-solves without scaling; failing both, it returns ErrNumerical. Optimal
// solutions are cleaned of variables left at the dual simplex's artificial ±1e10
// bounds (which happens on unbounded optimal faces), and problems without columns
// are decided without Clp, which mishandles them.
//
// # Time limits and cancellation
//
// A Clp call cannot be interrupted from Go, and restarting Clp's simplex is costly:
// each call rebuilds the factorization and pivoting weights, so cutting the
// 1000×5000 benchmark LP into calls of 500 iterations (doubling after each restart)
// needs about 2.9 times the iterations, and restarting the primal simplex after every
// single iteration can cycle forever. So a solve makes one Clp call, and a watcher
// goroutine, started only when the context can be cancelled or Options.TimeLimit is
// set, asks that call to stop as soon as the context is done or the wall-clock limit
// passes, by setting Clp's time limit to "now", which Clp checks between iterations
// (about once per refactorization; TestCancelDuringSolve sees the solve return about
// 0.1 ms after cancellation). The solve then returns an error wrapping ctx.Err(), or ErrTimeLimit
// (a context deadline gives an error wrapping both ErrTimeLimit and
// context.DeadlineExceeded). Whenever Clp stops on its iteration or time limit
// without such a request, the solve continues from the current basis. Clp's own time
// limit (Clp_setMaximumSeconds) measures the CPU time of the whole process, so it
// does not measure Options.TimeLimit itself.
//
// # Concurrency
//
// Separate Models, and concurrent calls of Solve, are independent and safe to use
// from different goroutines. A single Model serializes its methods on a mutex, so
// sharing one is safe but gains nothing. A Model owns C memory: Close frees it
// deterministically (a runtime cleanup is only a backstop for a forgotten Close).
//
// # Testing
//
// The tests check Clp against hand-computed optima, against LP duality (primal and
// dual feasibility, complementary slackness, equal objectives) and against gonum's
// pure-Go simplex (gonum.org/v1/gonum/optimize/convex/lp.Simplex) on random problems.
// gonum's simplex is a test oracle only, never used to solve.
package lp

// Package thresholds computes optimal reduce-placement thresholds (Tan, Meng,
// Meng, Zhang, "Improving ReduceTask Data Locality for Sequential MapReduce
// Jobs", IEEE INFOCOM 2013, §III-A, Theorems 1-2) and implements the paper's
// receding-horizon policy (§IV, Theorem 4) and a finite-horizon rolling
// generalisation of it. It holds decision rules (pure functions and small
// state), not simulators.
//
// # Model (docs/formats.md#thresholds-output)
//
// K jobs arrive one by one into an empty cluster and never leave. Job i
// brings (X_i, R_i), i.i.d. from a workload (any joint law of (X, R)); it must
// take R_i free reduce slots at once, and costs Y_i·Σ H(slot) over its slots,
// Y = X/R. Theorem 1: the optimal policy only looks at the order of the free
// slots by cost H (cheapest first) and places job i on a contiguous block of
// that list chosen by thresholds q_{1,i} ≥ q_{2,i} ≥ … that do not depend on
// H: with c = #{j : q_{j,i} > y}, the job takes positions c+1..c+R.
//
// # Recursion (Theorem 2, corrected)
//
// q_{·,n} has length L = (K−n)·r̄ (r̄ = max R): q_{j,n} is the expected Y that
// jobs n+1..K put on the j-th cheapest slot left after job n (0 where no job
// uses it). By Hardy's lemma job n inserts its R = v copies of y into the
// sorted list at positions c+1..c+v, so position i then holds
// clamp(y, q_i, q_{i−v}) (q_j = +∞ for j ≤ 0, 0 for j > L), and
//
//	q_{i,n−1} = Σ_v P[R=v]·E[ q_i·1{Y<q_i} + Y·1{q_i ≤ Y < q_{i−v}} + q_{i−v}·1{Y ≥ q_{i−v}} | R=v ],
//
// for i = 1..L+r̄. q_{·,0} are the cost coefficients: the optimal expected
// total cost on slot costs H_(1) ≤ H_(2) ≤ … is Σ_j H_(j)·q_{j,0}.
//
// The printed Theorem 2 takes the expectation under the unconditional law
// F of Y = X/R in every term, as if the v copies inserted by a job with
// R = v had the law of Y rather than the law of Y given R = v. Y depends on R
// whenever R is random — even when X and R are independent, since Y = X/R —
// so the printed recursion is wrong (its Remark 2, q_{j,K−1} = P[R ≥ j]·E[Y],
// should read Σ_{v≥j} P[R=v]·E[Y | R=v]). Example (TestPaperRecursionCounterexample):
// two jobs, slot costs 1, 1, 2, 10, X ∈ {6, 13} with probability 1/2 each
// independent of R ∈ {1, 2} with P[R=1] = 0.6. The printed recursion gives
// thresholds (7.6, 3.04) instead of (7.6, 1.9); a first job with X = 6, R = 2
// then takes the slots of cost 2 and 10 instead of 1 and 2, at expected total
// cost 45.5 instead of the optimal 35.6 (+27.8%); over the whole run the
// printed thresholds cost 6.9% more than optimal (30.86 vs 28.88). The
// printed form is available as PaperRecursion, for comparison only.
//
// With λ(q) = E[(q − Y)⁺ | R=v] each term is E[Y|v] + λ(q_i) (i ≤ v) or
// q_{i−v} − λ(q_{i−v}) + λ(q_i) (i > v), so a stage costs one λ evaluation per
// threshold and per value of R: exact closed forms for uniform, exponential,
// lognormal (direct formulas), gamma and Pareto (through models.Dist), exact
// prefix sums for discrete, empirical and joint laws. No sampling, no
// quadrature. The tests check the table against dynamic programming over
// every subset of free slots on small discrete workloads.
//
// Ties: y equal to a threshold is not counted in c (c counts thresholds
// strictly greater than y). Either choice has the same expected cost, since
// the merged sorted list of values is the same; the table does not depend on
// the rule.
//
// # Receding horizon (Theorem 4) and the rolling policy
//
// DecideRecedingHorizon places a job on the r cheapest free slots when
// y ≥ p·E[X/R] and on positions r+1..2r otherwise, p = N̄/(2N̄+1), with N̄ and
// E[X/R] from the sliding-window Estimator (snapshot/restore for the server).
// Rolling applies the stage-1 thresholds of a table for H+1 jobs drawn from
// the window's empirical joint law of (X, R), rebuilt when the estimate
// changes materially (see Rolling).
package thresholds

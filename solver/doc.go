// Package solver solves the Initial Task Assignment (ITA) of HaSTE (Yao,
// Gao, Wang, Sheng, Mi, IEEE TCC 2021, §3.3): choose how many tasks x_ij of
// each type i to start on each node j so that
//
//	Σ_i x_ij·R[i,p] ≤ C[j,p]   for every node j and resource p,
//	Σ_j x_ij ≤ s_i             (the s_i pending tasks of type i),
//
// maximising Σ_i Σ_j x_ij·v_i with v_i = Σ_p w_p·R[i,p], a multiple
// multi-dimensional bounded knapsack. Three methods share one Result type
// (docs/formats.md#ita-instance):
//
//   - exact: the proven global optimum. Task types with equal demands are
//     merged; identical nodes are grouped and ordered lexicographically
//     (symmetry breaking); a depth-first branch and bound over the counts,
//     node by node, is pruned by Lagrangian bounds computed from
//     single-node knapsack DPs over the capacity grid reduced by the GCD of
//     the demands (π = 0: independent nodes; π = LP duals of the pattern
//     formulation, solved by column generation with solver/lp; π = v:
//     supply), rounded down to the value unit, and by a bounded
//     transposition table on the remaining supply. Before the search, a
//     large neighbourhood search (lns.go) re-optimises a few nodes at a
//     time exactly to improve the incumbent, and a reduced-cost DP
//     (costdp.go) lowers the bound below the LP bound where the LP's
//     near-optimal patterns cannot use up the binding supplies exactly;
//     its shortest path, repaired, is an incumbent that is often the
//     optimum; a price-and-dive heuristic on the pattern LP (dive.go:
//     fix the LP's patterns, re-solve by column generation, solve the
//     last few nodes exactly) finds the optima that sit at the rounded
//     LP bound; the integer master over the columns generated so far
//     (pnb.go: price and branch, by a branch and bound on its LP) finds
//     the incumbents that need many nodes changed at once (hetero-3r);
//     a branch and price (bp.go: the pattern LP re-solved under
//     branches on the total count of a type, then on its count on a class
//     of identical nodes) proves most of the instances whose optimum is
//     below the rounded LP bound. Where the LP's duals and the values are
//     multiples of one small unit, the bounds on a whole assignment also
//     step down over the values no assignment can take (lattice.go: every
//     value is the LP's Lagrangian bound less an element of the numerical
//     semigroup of the duals; yarn-0's 7554 is such a gap). Where the
//     grids are coarsened, the exact single-node maxima
//     of the LP's pricing cap each node's bound. Instances that the greedy
//     places entirely, or that the cheap bounds prove, skip the LP. A
//     time limit returns the incumbent with its proven bound and
//     Optimal = false, at the limit even if a phase has not yet noticed it
//     (answerBy). The phases' budgets are shares of the work left, a
//     deterministic count of operations (workclock.go), so that the same
//     instance, time limit and Options.Seed take the same path under any
//     load on one build (CPU architecture and Clp version: Go fuses
//     multiply-adds on arm64 and with GOAMD64=v3, not at amd64's default
//     level); the time limit itself is wall
//     clock (and a caller's context ending sooner sizes the shares by the
//     wall clock left).
//   - per-node: the paper's Algorithm 1 as intended — node 1 filled with an
//     optimal single-node knapsack, then node 2 with what is left, etc.
//     (see perNodeAssign for why Algorithm 1 as printed is not exact).
//   - ffd-dp: the FFD dot-product greedy with the fitness of Eq. 1.
//
// Every valid instance is accepted: capacities, demands and counts may be
// 0; task types that demand nothing are spread over the nodes, and those
// that fit no node are left out and listed in Result.Unplaced with the
// reason. Result.UpperBound is the one best proven bound; Options.Gap is a
// relative optimality tolerance and Options.Progress receives the
// incumbent, bound, gap and nodes while the exact method runs.
//
// Built-in instances haste-table2 … haste-table5 reproduce the first batch
// of map tasks of the paper's Tables 2-5 (see hasteTables); RandomInstance
// draws seeded random instances and Families the robustness suite (13
// families a scheduler meets, 10 seeds each) on which the benchmark report
// compares the exact method with CBC and HiGHS; WriteLP writes the compact
// integer program for CBC, HiGHS or glpsol.
package solver

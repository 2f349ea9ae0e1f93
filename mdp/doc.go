// Package mdp holds finite average-cost Markov decision processes, the
// reduce-placement MDP of the stable system (Tan, Meng, Meng, Zhang,
// "Improving ReduceTask Data Locality for Sequential MapReduce Jobs", IEEE
// INFOCOM 2013, §III-B, Lemma 2 and Theorem 3) and lower bounds on the cost
// of any reduce-placement policy.
//
// # Finite MDPs
//
// An MDP (built with a Builder) stores state-dependent action sets, each
// action's expected cost and its sparse transition distribution in flat
// arrays. The criterion is the long-run average cost per step of unichain
// MDPs, solved three ways that the tests check against each other (to 1e-8)
// and against brute force over every deterministic stationary policy:
//
//   - RelativeValueIteration, with the aperiodicity transform
//     P̃ = τP + (1−τ)I and the span (Odoni) bounds as stopping rule;
//   - SolveLP, the occupation-measure linear program solved with COIN-OR Clp
//     (package solver/lp), whose duals are the bias;
//   - PolicyIteration, with exact evaluation by state reduction (MDPs whose
//     chains fit its limits: see bandOrder).
//
// Evaluate computes the average cost, bias and stationary law of a
// stationary, possibly randomized, policy (exactly by state reduction
// where the chain fits its limits, by relative value iteration beyond).
//
// # The placement MDP (SolvePlacement, EvaluatePolicy)
//
// Jobs arrive as a Poisson process (λ), their map phase is K-limited
// processor sharing with exponential work (μ), FIFO waiting room of
// MaxWaiting places (docs/formats.md#placement-scenario). When a job enters service it brings
// (X, R) and takes ANY R-subset of the free slots, paying Y·H(A), Y = X/R.
// The state is the multiset of held sets of the jobs in service and the
// number waiting; slots of equal cost are merged into classes, so a held set
// is a count vector over classes (the symmetry is exact: every policy of
// interest depends on slots only through their costs). The continuous-time
// chain is uniformized at Λ = λ + μ and a decision step is inserted at each
// entry into service; the cost per job that entered service is
// g·(1+e)/e with e the policy-independent entry probability per step (see
// SolvePlacement for the derivation). A discrete workload is solved exactly;
// a continuous one is bracketed between its conditional-mean discretization
// (upper bound) and its two-point mean-preserving spread (lower bound),
// which narrow as the bins are refined. The optimal decision rule is a
// policy.Placement named "mdp-optimal" that decides on live states.
//
// # Lower bounds for large scenarios
//
// HindsightBound is the LP relaxation of the offline assignment that knows a
// whole trace (jobs in service together use disjoint slots), aggregated by
// cost class and split by busy periods, a bound on every policy's realized
// cost on that trace; HindsightBoundCoarse rounds costs down into fewer
// classes for clusters of all-distinct costs; HindsightBoundLagrangian
// bounds the same LP from below by Lagrangian relaxation (a weighted
// interval packing per cost class, every step a bound, linear work per
// step) for traces too long for the LP. EmptyClusterBound is the trivial
// E[Y·Σ of the R cheapest costs].
//
// FitPenalty and Penalty.BoundOfRecords are the information relaxation
// with penalties (Brown, Smith and Sun 2010): the hindsight LP with costs
// changed by zero-mean martingale terms of the queue and of the jobs'
// (X, R), a bound on every policy's expected cost that takes away most of
// what the hindsight LP gains from knowing the future (penalty.go derives
// it); Penalty.Policy is the one-step lookahead on its value function.
// ValueBound is the same relaxation on the MDP's own uniformized chain
// (sample paths of its noise, a dynamic program over each path) with the
// penalty of a value function built from greedy's bias: within a few
// percent of the optimum where the chain can be built (penalty_value.go).
//
// The package does not log; long computations take a context (checked at
// every sweep) and report progress through callbacks.
package mdp

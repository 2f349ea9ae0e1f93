// Package bound computes what `optd bound` prints (docs/formats.md#bound-output) and what the
// server's Bound RPC streams: for a reduce-placement scenario (the stable
// system of Tan et al., INFOCOM 2013, §III-B, simulated by package sim), each
// requested policy's mean cost per job with a 95% confidence interval over
// replications, every applicable lower bound, the exact optimum where the MDP
// is small enough to solve, and each policy's gap to the best bound.
//
// Lower bounds:
//
//   - "hindsight-lp": per replication, the LP relaxation of the offline
//     assignment that knows the whole sampled trace (mdp.HindsightBound),
//     divided by the number of counted jobs, averaged over replications.
//     Every policy is simulated on the same traces (common random numbers),
//     so this bounds each policy's realized cost, trace by trace.
//   - "hindsight-lagrangian": per replication, the same LP bounded from
//     below by Lagrangian relaxation of its job rows
//     (mdp.HindsightBoundLagrangian: per slot class a weighted interval
//     packing), every subgradient step a bound, started from the level
//     bound (mdp.HindsightBoundLevels: each cost level an exact min-cost
//     flow, within a fraction of a percent of the LP); for large traces
//     where the LP itself is slow.
//   - "hindsight-penalized": per replication, the hindsight LP with costs
//     changed by an information-relaxation penalty of zero mean under every
//     non-anticipative policy (mdp.FitPenalty, fitted on training runs
//     simulated apart from the replications), averaged over replications:
//     a bound on every policy's EXPECTED cost, not trace by trace. For
//     workload scenarios (Poisson arrivals, exponential work) and traces
//     with exponential works (queue terms only). On a large cluster the
//     penalty is constant on groups of slots and each replication's
//     penalized LP is bounded by its Lagrangian relaxation (LagrangeSteps
//     steps).
//   - "value-penalty": the information relaxation of the MDP's own
//     uniformized chain (its noise revealed along sample paths of its
//     own, the decisions chosen by a dynamic program over the path) with
//     the penalty of a value function built from greedy's bias
//     (mdp.ValueBound): a bound on every policy's EXPECTED cost, for the
//     scenarios whose chain can be built (as for "mdp-optimal", a
//     discrete workload). It solves no MDP (one policy evaluation) and
//     counts for certified_gaps, but it is no cheaper than the MDP's
//     solve: it measures how much of the hindsight LP's gap is the value
//     of information.
//   - "empty-cluster": every job alone in an empty cluster,
//     E[Y·Σ_{k≤R} H_(k)] (mdp.EmptyClusterBound; for a trace scenario the
//     mean over the simulated jobs).
//   - "mdp-optimal" (= "optimal") for explicit slot costs, a finite
//     max_waiting and a discrete workload whose MDP has at most MaxStates
//     states; for a continuous workload "mdp-lower" (and "mdp-upper" under
//     "upper_bounds") bracket the optimum with Bins bins.
//
// Policies are the names of policy.PlacementNames() (with a family's
// parameters, NAME:k=v;k=v) plus "mdp-optimal" (the MDP's decision table,
// when solved); each is built with the scenario's queueing model
// (sim.Scenario.PlacementModel), which the fitted policies of package
// policy/adp (adp-penalty, adp-bid-price) fit on, once per run, before any
// simulation.
//
// Sharding: shard i of n runs replications [⌊i·N/n⌋, ⌊(i+1)·N/n⌋) of the N
// in the scenario and returns the same shape with the raw per-replication
// figures, the settings and the replication-independent part under "shard";
// [Merge] checks that the shards agree and cover every replication once, and
// returns exactly what the unsharded run returns.
//
// The package sits above sim, policy and mdp; the command (cmd/bound) and the
// server (server.OptimizeService.Bound) are thin adapters over [Run].
package bound

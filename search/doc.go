// Package search tunes the parameters of a policy by simulation with common
// random numbers: every candidate is simulated on the same replications (the
// same arrivals, works and job sizes), so differences between candidates are
// not drowned in sampling noise, and the optimizer (gonum's optimize: CMA-ES
// or Nelder-Mead) sees a deterministic objective.
//
// The package is generic over "a scenario and a parameterized policy → a
// simulated metric per replication" (Problem). A model plugs in with one
// adapter: PlacementProblem does it for the reduce-placement queue of
// package sim and the placement families of package policy;
// ExactPlacementProblem replaces simulation by the exact evaluation of
// package mdp where the MDP is small enough to solve; ClusterProblem
// (PipelineParams) tunes a heartbeat pipeline's parameters, HaSTE-A's β
// among them, on a scenario of the cluster simulator.
//
// Run returns the best parameters with the objective's 95% confidence
// interval, the default parameters' objective on the same replications and
// the paired difference, a validation on fresh replications that the search
// never saw (to expose overfitting to the search's seeds), the comparison
// with reference policies and the best lower bound where the problem has
// one.
package search

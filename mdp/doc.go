// Package mdp will hold finite average-cost Markov decision processes (relative
// value iteration and the LP form via solver/lp), the reduce-placement MDP of the
// stable system (Tan et al., INFOCOM 2013, Theorem 3) and lower bounds for
// reduce placement (hindsight LP on a trace, discretization bounds).
//
// It is filled by the issue "Reduce placement in a running cluster"; it has no
// code yet.
package mdp

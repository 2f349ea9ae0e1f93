// Package search will tune policy parameters by simulation with common random
// numbers (gonum optimize: CMA-ES, Nelder-Mead).
//
// It is filled by the policy-search issue; it has no code yet.
package search

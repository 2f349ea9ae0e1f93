package search

import "context"

// Problem is what a search tunes: a parameterized policy on a scenario,
// observed through a simulated metric per replication. Replication rep
// must draw all its randomness from rep (common random numbers): two
// calls with the same rep see the same arrivals, works and job sizes, and
// Metric must be deterministic given (x, rep). Metric is called
// concurrently from several goroutines.
type Problem interface {
	// Space declares the parameters (their order is the order of x).
	Space() Space
	// Metric simulates replication rep of the scenario under the policy
	// with parameter values x and returns the metric to minimize (a mean
	// cost, a makespan, a mean response time, a weighted mix).
	Metric(ctx context.Context, x []float64, rep int) (float64, error)
}

// Referenced is a Problem with reference policies (the published
// settings, other rules) that the result compares the best candidate with,
// replication by replication.
type Referenced interface {
	References() []string
	ReferenceMetric(ctx context.Context, name string, rep int) (float64, error)
}

// Bounded is a Problem with lower bounds on the metric of every policy on
// replication rep (pathwise bounds, such as the hindsight LP on the very
// jobs of the replication, or exact constants).
type Bounded interface {
	LowerBounds(ctx context.Context, rep int) (map[string]float64, error)
}

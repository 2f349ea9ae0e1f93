package sim

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/optd/optd/policy"
)

// PolicyFactory makes a fresh placement policy for one replication. seed is
// the replication's policy seed (PolicySeed), for policies that randomize.
type PolicyFactory func(seed uint64) (policy.Placement, error)

// NamedFactory is a policy to simulate and the name to report it under.
type NamedFactory struct {
	Name string
	New  PolicyFactory
}

// Replication is one replication of a scenario under several policies.
type Replication struct {
	// Index is the replication number and Seed its derived seed.
	Index int
	Seed  uint64
	// Results holds each policy's run, by name.
	Results map[string]*Result
	// Records is the record of every arrival from the first policy's run
	// when requested. Arrivals, service intervals [Start, End), X and R
	// depend only on the replication's streams, not on the policy (the
	// placement does not change the queue), so they are the same for every
	// policy; only Cost is the first policy's.
	Records []JobRecord
}

// RunReplication simulates replication rep of the scenario once per policy,
// each on the same job stream (common random numbers: each policy's run
// re-reads the replication's arrival, work and (X, R) streams from their
// start; the policy's own randomness has a separate stream).
func (s *Scenario) RunReplication(ctx context.Context, rep int, policies []NamedFactory, record bool) (*Replication, error) {
	if rep < 0 || rep >= s.Replications {
		return nil, fmt.Errorf("%w: replication %d out of range [0, %d)", ErrInvalidModel, rep, s.Replications)
	}
	seed := ReplicationSeed(s.Seed, rep)
	out := &Replication{Index: rep, Seed: seed, Results: make(map[string]*Result, len(policies))}
	m := s.Model()
	for k, nf := range policies {
		if _, dup := out.Results[nf.Name]; dup {
			return nil, fmt.Errorf("%w: policy %q listed twice", ErrInvalidModel, nf.Name)
		}
		p, err := nf.New(PolicySeed(seed))
		if err != nil {
			return nil, fmt.Errorf("sim: policy %q: %w", nf.Name, err)
		}
		res, err := m.Run(ctx, s.Source(rep), p, RunOptions{Warmup: s.WarmupJobs, Record: record && k == 0})
		if err != nil {
			return nil, fmt.Errorf("replication %d: %w", rep, err)
		}
		if k == 0 {
			out.Records, res.Records = res.Records, nil
		}
		out.Results[nf.Name] = res
	}
	return out, nil
}

// MeanCI95 returns the mean of xs and the half-width of its 95% confidence
// interval, t_{0.975, n−1}·s/√n with s the sample standard deviation
// (Student t). The half-width is NaN when n < 2; both are NaN when n = 0.
// Sums are taken in order, so the result is a deterministic function of xs.
func MeanCI95(xs []float64) (mean, half float64) {
	n := len(xs)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(n)
	if n < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
	return mean, t * sd / math.Sqrt(float64(n))
}

package sim

import "github.com/optd/optd/policy"

// PlacementModel returns the scenario's stable system for the placement
// policies fitted on one (policy.PlacementConfig.Model), seeded by the
// scenario's seed. For a trace it is the Poisson approximation of the
// trace: its effective rate and its jobs' empirical law of (X, R).
func (s *Scenario) PlacementModel() *policy.PlacementModel {
	return &policy.PlacementModel{
		ArrivalRate: s.ArrivalRate, ServiceRate: s.ServiceRate, MaxJobsInService: s.K, MaxWaiting: s.MaxWaiting,
		Workload: s.Workload, SlotCosts: s.SlotCosts, Seed: s.Seed,
	}
}

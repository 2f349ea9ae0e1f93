package policy

import (
	"fmt"
	"math"
)

// MaxModelSlots bounds the slots and jobs in service of a PlacementModel
// (the simulator's own limit, sim.MaxSlots, which this package cannot
// import: a test of package adp checks that they agree).
const MaxModelSlots = 1 << 20

// Check validates the model a policy named name needs (the policies that
// fit to, or simulate, the cluster's queueing model), naming the field, its
// value and the limit; a nil model is an error saying what is missing.
func (m *PlacementModel) Check(name string) error {
	bad := func(field string, value any, format string, args ...any) error {
		return fmt.Errorf("%w: %s: model.%s = %v: %s", ErrInvalidConfig, name, field, value, fmt.Sprintf(format, args...))
	}
	switch {
	case m == nil:
		return fmt.Errorf("%w: %s needs the cluster's queueing model "+
			"(model: arrival_rate, service_rate, max_jobs_in_service, max_waiting, workload, slot costs); none was given", ErrInvalidConfig, name)
	case !(m.ArrivalRate > 0) || math.IsInf(m.ArrivalRate, 0):
		return bad("arrival_rate", m.ArrivalRate, "must be finite and > 0")
	case !(m.ServiceRate > 0) || math.IsInf(m.ServiceRate, 0):
		return bad("service_rate", m.ServiceRate, "must be finite and > 0")
	case m.MaxJobsInService < 1 || m.MaxJobsInService > MaxModelSlots:
		return bad("max_jobs_in_service", m.MaxJobsInService, "must be an integer in [1, %d]", MaxModelSlots)
	case m.MaxWaiting < -1:
		return bad("max_waiting", m.MaxWaiting, "must be ≥ 0, or −1 for unlimited")
	case m.MaxWaiting == -1 && m.ArrivalRate >= m.ServiceRate:
		return bad("arrival_rate", m.ArrivalRate, "the queue is unstable: arrival_rate/service_rate = %g ≥ 1 with unlimited max_waiting", m.ArrivalRate/m.ServiceRate)
	case m.Workload == nil:
		return bad("workload", nil, "missing: the law of (X, R)")
	case len(m.SlotCosts) > MaxModelSlots:
		return bad("slot_costs", fmt.Sprintf("%d slots", len(m.SlotCosts)), "at most %d", MaxModelSlots)
	}
	for i, c := range m.SlotCosts {
		if !(c >= 0) || math.IsInf(c, 0) {
			return bad(fmt.Sprintf("slot_costs[%d]", i), c, "must be finite and ≥ 0")
		}
	}
	if need := m.MaxJobsInService * m.Workload.MaxReduces(); need > len(m.SlotCosts) {
		return bad("slot_costs", fmt.Sprintf("%d slots", len(m.SlotCosts)),
			"need at least max_jobs_in_service·max_reduces = %d·%d = %d slots", m.MaxJobsInService, m.Workload.MaxReduces(), need)
	}
	return nil
}

package mdp

import (
	"errors"
	"testing"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/models"
	"github.com/optd/optd/sim"
)

// TestModelOf: a scenario with listed slot costs, a workload and a finite
// waiting room has a model with its fields; each missing condition is a
// *NoModelError of kind Invalid that names it.
func TestModelOf(t *testing.T) {
	w := &models.Workload{}
	ok := sim.Scenario{SlotCosts: []float64{1, 2}, SlotsExplicit: true, K: 2, ArrivalRate: 0.5, ServiceRate: 1, MaxWaiting: 3, Workload: w}
	m, err := ModelOf(&ok)
	if err != nil || m.K != 2 || m.Lambda != 0.5 || m.Mu != 1 || m.MaxWaiting != 3 || m.Workload != w || len(m.SlotCosts) != 2 {
		t.Fatalf("ModelOf = %+v, %v", m, err)
	}
	trace, drawn, unlimited := ok, ok, ok
	trace.Trace = &sim.TraceSpec{}
	drawn.SlotsExplicit = false
	unlimited.MaxWaiting = -1
	for _, tc := range []struct {
		s    sim.Scenario
		want string
	}{
		{trace, "a trace scenario has no MDP"},
		{drawn, "slots are drawn from a law; the MDP needs slots.costs"},
		{unlimited, "max_waiting is unlimited; the MDP needs a finite waiting room"},
	} {
		_, err := ModelOf(&tc.s)
		var no *NoModelError
		if !errors.As(err, &no) || err.Error() != tc.want || errkind.Of(err) != errkind.Invalid {
			t.Errorf("ModelOf: %v, want %q", err, tc.want)
		}
	}
}

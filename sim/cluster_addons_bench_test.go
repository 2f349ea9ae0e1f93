package sim

import (
	"testing"

	"github.com/optd/optd/policy"
)

// BenchmarkSimulateTable5AddOns simulates HaSTE's Table 5 scenario under
// FIFO with each speculation and sharing add-on, which read every running
// attempt's progress on every heartbeat: the add-ons' cost over plain FIFO
// (BenchmarkSimulateTable5/policy=fifo), in simulated events per second.
func BenchmarkSimulateTable5AddOns(b *testing.B) {
	var specs []string
	for _, addOn := range []string{policy.NameSpeculationHadoop, policy.NameLATE, policy.NameSEPB, policy.NameBASE,
		policy.NameResourceStealingPrefix + "even", policy.NameResourceStealingPrefix + "ltm", policy.NameDynamicAdjust} {
		specs = append(specs, "fifo+"+addOn)
	}
	benchTable5(b, specs)
}

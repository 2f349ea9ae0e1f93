package sim

import (
	"testing"

	"github.com/optd/optd/policy/sharing"
	"github.com/optd/optd/policy/speculation"
)

// BenchmarkSimulateTable5AddOns simulates HaSTE's Table 5 scenario under
// FIFO with each speculation and sharing add-on, which read every running
// attempt's progress on every heartbeat: the add-ons' cost over plain FIFO
// (BenchmarkSimulateTable5/policy=fifo), in simulated events per second.
func BenchmarkSimulateTable5AddOns(b *testing.B) {
	var specs []string
	for _, addOn := range []string{speculation.NameSpeculationHadoop, speculation.NameLATE, speculation.NameSEPB, speculation.NameBASE,
		sharing.NameResourceStealingPrefix + "even", sharing.NameResourceStealingPrefix + "ltm", sharing.NameDynamicAdjust} {
		specs = append(specs, "fifo+"+addOn)
	}
	benchTable5(b, specs)
}

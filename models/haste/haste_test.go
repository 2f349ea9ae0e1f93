package haste

import (
	"slices"
	"testing"
)

// TestTables checks the transcription's invariants: four tables, unique
// job ids, every request fits one of the table's nodes (the paper's jobs
// all ran), iterative jobs are exactly the Pagerank and Kmeans rows, and
// Lookup hands out copies.
func TestTables(t *testing.T) {
	if got := Names(); !slices.Equal(got, []string{"haste-table2", "haste-table3", "haste-table4", "haste-table5"}) {
		t.Fatalf("Names() = %v", got)
	}
	for _, name := range Names() {
		tb, ok := Lookup(name)
		if !ok || tb.Name != name || tb.Source == "" || tb.Nodes < 1 || len(tb.Jobs) == 0 {
			t.Fatalf("Lookup(%q) = %+v, %v", name, tb, ok)
		}
		seen := map[string]bool{}
		for _, j := range tb.Jobs {
			if seen[j.ID] {
				t.Errorf("%s: job %s twice", name, j.ID)
			}
			seen[j.ID] = true
			if j.MapMemGB > tb.NodeMemGB || j.MapVCores > tb.NodeVCores || j.ReduceMemGB > tb.NodeMemGB || j.ReduceVCores > tb.NodeVCores {
				t.Errorf("%s: job %s requests more than a node", name, j.ID)
			}
			iterative := j.Bench == "pagerank" || j.Bench == "kmeans"
			if (j.Iterations > 1) != iterative || j.Iterations < 1 {
				t.Errorf("%s: job %s (%s) has %d iterations", name, j.ID, j.Bench, j.Iterations)
			}
			if m := j.MapsPerIteration(); m*j.Iterations < j.Maps || (m-1)*j.Iterations >= j.Maps {
				t.Errorf("%s: job %s: %d maps per iteration is not ⌈%d/%d⌉", name, j.ID, m, j.Maps, j.Iterations)
			}
		}
		tb.Jobs[0].ID = "changed"
		if again, _ := Lookup(name); again.Jobs[0].ID == "changed" {
			t.Errorf("%s: Lookup shares its rows with the caller", name)
		}
	}
	if _, ok := Lookup("haste-table1"); ok {
		t.Error("Lookup of an unknown table succeeded")
	}
}

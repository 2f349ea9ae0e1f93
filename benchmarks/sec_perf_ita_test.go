package benchmarks

import (
	"strings"
	"testing"

	"github.com/optd/optd/solver"
)

// TestITASeeds: the comparison runs every seed in full mode, one in quick
// mode, and OPTD_ITA_SEEDS seeds when set; a bad count is an error naming
// the variable and the range, and the cases hold the four HaSTE tables and
// that many seeds of every family.
func TestITASeeds(t *testing.T) {
	full, quick := &Env{}, &Env{Config: Config{Quick: true}}
	for _, tc := range []struct {
		env  *Env
		set  string
		want int
	}{
		{full, "", solver.FamilySeeds}, {quick, "", 1}, {full, "3", 3}, {quick, "2", 2},
	} {
		t.Setenv("OPTD_ITA_SEEDS", tc.set)
		got, err := itaSeeds(tc.env)
		if err != nil || got != tc.want {
			t.Errorf("quick %v, OPTD_ITA_SEEDS=%q: %d seeds (%v), want %d", tc.env.Quick, tc.set, got, err, tc.want)
		}
		cases, err := itaCases(tc.env)
		if err != nil || len(cases) != len(solver.BuiltinNames())+tc.want*len(solver.Families()) {
			t.Errorf("quick %v, OPTD_ITA_SEEDS=%q: %d cases (%v)", tc.env.Quick, tc.set, len(cases), err)
		}
	}
	for _, bad := range []string{"0", "-1", "11", "x"} {
		t.Setenv("OPTD_ITA_SEEDS", bad)
		if _, err := itaSeeds(full); err == nil || !strings.Contains(err.Error(), "OPTD_ITA_SEEDS") || !strings.Contains(err.Error(), "1..10") {
			t.Errorf("OPTD_ITA_SEEDS=%q: error %v", bad, err)
		}
	}
}

package solver

import (
	"encoding/json"
	"math"
	"slices"
	"testing"
)

// TestFamiliesValidAndSeeded checks that every family draws valid
// instances, the same ones for the same seed, different ones for
// different seeds, and that the suite has at least 100 instances.
func TestFamiliesValidAndSeeded(t *testing.T) {
	if n := len(Families()) * FamilySeeds; n < 100 {
		t.Fatalf("the suite has %d instances, want ≥ 100", n)
	}
	for _, f := range Families() {
		var prev []byte
		for seed := range uint64(FamilySeeds) {
			in := f.Instance(seed)
			if err := in.Validate(); err != nil {
				t.Fatalf("%s seed %d: %v", f.Name, seed, err)
			}
			a, _ := json.Marshal(in)
			again, _ := FamilyInstance(f.Name, seed)
			b, _ := json.Marshal(again)
			if string(a) != string(b) {
				t.Fatalf("%s seed %d: two draws differ", f.Name, seed)
			}
			if slices.Equal(a, prev) {
				t.Fatalf("%s: seeds %d and %d draw the same instance", f.Name, seed-1, seed)
			}
			prev = a
		}
	}
	if _, err := FamilyInstance("nope", 0); err == nil {
		t.Error("unknown family accepted")
	}
}

// TestValueUnit checks the objective unit: binary fractions exactly,
// decimal weights such as 0.1 through a common denominator, none for
// values without a common unit.
func TestValueUnit(t *testing.T) {
	for _, tc := range []struct {
		w    []float64
		dem  [][]int64
		unit float64
	}{
		{[]float64{1}, [][]int64{{4}, {6}, {10}}, 2},
		{[]float64{0.25}, [][]int64{{6}, {1}}, 0.25},
		{[]float64{1, 0.1}, [][]int64{{3, 7}, {2, 20}, {0, 3}}, 0.1},
		{[]float64{1.0 / 3}, [][]int64{{1}, {2}}, 1.0 / 3},
		{[]float64{math.Pi, 1}, [][]int64{{1, 0}, {0, 1}}, 0},
		{[]float64{1.0 / 1024, 1}, [][]int64{{2048, 1}, {1024, 0}}, 1},
		// values near 4·10⁹: every float64 there is a multiple of 2⁻²⁰,
		// and 4000000000.1003 lies within a few ulps of a multiple of
		// 1/329; the weights say 0.1 and 0.0001
		{[]float64{0.1, 2, 0.5}, [][]int64{{43474973759, 3, 6}, {41149557193, 3, 2}}, 0.1},
		{[]float64{0.1, 0.0001}, [][]int64{{40000000001, 3}, {40000000001, 0}, {30000000001, 0}}, 0.0001},
		// a decimal weight of 4096 or more is a binary fraction too
		// (4096.1 a multiple of 2⁻⁴⁰): its decimal denominator is smaller
		{[]float64{4096.1, 0.1}, [][]int64{{1, 3}, {2, 0}, {0, 1}}, 0.1},
		{[]float64{4096.5, 0.1}, [][]int64{{2, 5}, {1, 1}}, 0.1},
		// a value of 2⁵³ units or more has no exact unit
		{[]float64{0.5}, [][]int64{{1 << 40}, {1}}, 0.5},
		{[]float64{1e6}, [][]int64{{1 << 40}, {1}}, 0},
		// a tiny weight is no zero: its part of every value counts
		{[]float64{1, 1.9e-15}, [][]int64{{2, 80724868897}, {1, 375961896818}}, 0},
		{[]float64{1, 1e-300}, [][]int64{{2, 1}, {1, 3}}, 0},
	} {
		num, den := valueUnit(tc.w, tc.dem)
		got := 0.0
		if den > 0 {
			got = num / den
		}
		if math.Abs(got-tc.unit) > 1e-12*max(1, tc.unit) {
			t.Errorf("valueUnit(%v, %v) = %v/%v, want %v", tc.w, tc.dem, num, den, tc.unit)
		}
	}
	// objectives and bounds of a 0.1-weighted instance print as decimals
	in, _ := FamilyInstance("hetero-3r", 0)
	m := newModel(in)
	if v := m.snap(2484.7000000000003); v != 2484.7 {
		t.Errorf("snap = %v, want 2484.7", v)
	}
	if v := m.floorBound(2488.8000000000093); v != 2488.8 {
		t.Errorf("floorBound = %v, want 2488.8", v)
	}
}

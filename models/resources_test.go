package models

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// shareTol bounds the rounding error of a share or dot product computed in
// float64 from integers below 2^40.
const shareTol = 1e-12

// expectPanic runs f and fails unless it panics with a message containing want.
func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("panic %v, want one containing %q", r, want)
		}
	}()
	f()
}

func TestResourcesArithmetic(t *testing.T) {
	a, b := Resources{8192, 8}, Resources{1024, 3}
	tests := []struct {
		name      string
		got, want Resources
	}{
		{"add", a.Add(b), Resources{9216, 11}},
		{"sub", a.Sub(b), Resources{7168, 5}},
		{"sub negative", b.Sub(a), Resources{-7168, -5}},
		{"scale", b.Scale(4), Resources{4096, 12}},
		{"scale zero", b.Scale(0), Resources{0, 0}},
		{"empty", Resources{}.Add(Resources{}), Resources{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.got.Equal(tc.want) {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
	if !a.Equal(Resources{8192, 8}) || !b.Equal(Resources{1024, 3}) {
		t.Errorf("operands modified: %v %v", a, b)
	}
}

// TestResourcesProperties checks the operations against each other on
// random vectors: (a+b)−b = a, k·b = b+...+b, and Fits(c) ⇔ c−r ≥ 0.
func TestResourcesProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		d := 1 + rng.IntN(4)
		a, b, c := make(Resources, d), make(Resources, d), make(Resources, d)
		for p := range d {
			a[p], b[p], c[p] = rng.Int64N(100), rng.Int64N(100), rng.Int64N(100)
		}
		if got := a.Add(b).Sub(b); !got.Equal(a) {
			t.Fatalf("(%v+%v)-%v = %v", a, b, b, got)
		}
		k := rng.Int64N(5)
		sum := make(Resources, d)
		for range k {
			sum = sum.Add(b)
		}
		if !b.Scale(k).Equal(sum) {
			t.Fatalf("%d·%v = %v, repeated sum %v", k, b, b.Scale(k), sum)
		}
		slack := c.Sub(a)
		nonNeg := true
		for _, v := range slack {
			nonNeg = nonNeg && v >= 0
		}
		if a.Fits(c) != nonNeg {
			t.Fatalf("%v.Fits(%v) = %v, but %v − %v = %v", a, c, a.Fits(c), c, a, slack)
		}
		// With every capacity positive, fitting is a dominant share ≤ 1.
		pos := c.Add(onesLike(d))
		if a.Fits(pos) != (a.DominantShare(pos) <= 1) {
			t.Fatalf("%v vs %v: Fits %v, dominant share %g", a, pos, a.Fits(pos), a.DominantShare(pos))
		}
	}
}

func onesLike(d int) Resources {
	r := make(Resources, d)
	for p := range r {
		r[p] = 1
	}
	return r
}

func TestResourcesFits(t *testing.T) {
	tests := []struct {
		r, c Resources
		want bool
	}{
		{Resources{1024, 1}, Resources{8192, 8}, true},
		{Resources{8192, 8}, Resources{8192, 8}, true},
		{Resources{8193, 1}, Resources{8192, 8}, false},
		{Resources{1, 9}, Resources{8192, 8}, false},
		{Resources{}, Resources{}, true},
	}
	for _, tc := range tests {
		if got := tc.r.Fits(tc.c); got != tc.want {
			t.Errorf("%v.Fits(%v) = %v, want %v", tc.r, tc.c, got, tc.want)
		}
	}
}

func TestDominantShare(t *testing.T) {
	tests := []struct {
		name string
		r, c Resources
		want float64
	}{
		// Ghodsi et al. (NSDI'11) example: 9 CPUs, 18 GB; user A's task
		// <1 CPU, 4 GB> has dominant share 4/18 = 2/9 (memory).
		{"DRF paper user A", Resources{1, 4}, Resources{9, 18}, 2.0 / 9},
		{"DRF paper user B", Resources{3, 1}, Resources{9, 18}, 1.0 / 3},
		{"zero demand", Resources{0, 0}, Resources{9, 18}, 0},
		{"zero capacity unused", Resources{0, 3}, Resources{0, 6}, 0.5},
		{"zero capacity needed", Resources{1, 3}, Resources{0, 6}, math.Inf(1)},
		{"over capacity", Resources{20, 1}, Resources{10, 10}, 2},
		{"no dimensions", Resources{}, Resources{}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.r.DominantShare(tc.c)
			if !(got == tc.want || scalar.EqualWithinAbsOrRel(got, tc.want, shareTol, shareTol)) {
				t.Errorf("DominantShare = %g, want %g", got, tc.want)
			}
		})
	}
}

func TestDot(t *testing.T) {
	// docs/formats.md#ita-instance: value of a task = Σ_p weights[p]·demand[p].
	got := Resources{1024, 2}.Dot([]float64{0.001, 0.5})
	if want := 1.024 + 1; !scalar.EqualWithinAbsOrRel(got, want, shareTol, shareTol) {
		t.Errorf("Dot = %g, want %g", got, want)
	}
	if got := (Resources{}).Dot(nil); got != 0 {
		t.Errorf("empty Dot = %g", got)
	}
}

func TestResourcesDimensionMismatchPanics(t *testing.T) {
	a, b := Resources{1, 2}, Resources{1, 2, 3}
	tests := map[string]func(){
		"Add":           func() { a.Add(b) },
		"Sub":           func() { a.Sub(b) },
		"Fits":          func() { a.Fits(b) },
		"DominantShare": func() { a.DominantShare(b) },
		"Dot":           func() { a.Dot([]float64{1}) },
		"Named":         func() { a.Named(ResourceNames{"x"}) },
	}
	for op, f := range tests {
		t.Run(op, func(t *testing.T) {
			expectPanic(t, "models: Resources."+op+": dimension mismatch", f)
		})
	}
}

func TestResourcesFormatting(t *testing.T) {
	r := Resources{8192, 8}
	if got, want := r.String(), "[8192 8]"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got, want := r.Named(MemoryVCores()), "memory_mb=8192 vcores=8"; got != want {
		t.Errorf("Named = %q, want %q", got, want)
	}
	if got := r.Clone(); !got.Equal(r) || &got[0] == &r[0] {
		t.Errorf("Clone = %v shares storage or differs", got)
	}
	if Resources(nil).Clone() != nil || !(Resources{0, 0}).IsZero() || r.IsZero() || r.Equal(Resources{8192}) {
		t.Errorf("Clone/IsZero/Equal edge cases wrong")
	}
}

func TestResourceNames(t *testing.T) {
	names := MemoryVCores()
	if names.Index(ResourceVCores) != 1 || names.Index("gpus") != -1 {
		t.Errorf("Index wrong on %v", names)
	}
	tests := []struct {
		names ResourceNames
		want  string
	}{
		{ResourceNames{"memory_mb", ""}, `models: invalid resources: resources[1] = "": empty resource name`},
		{ResourceNames{"memory_mb", "vcores", "memory_mb"}, `models: invalid resources: resources[2] = "memory_mb": duplicate resource name (also at index 0)`},
	}
	for _, tc := range tests {
		err := tc.names.Validate()
		if !errors.Is(err, ErrInvalidResources) || err.Error() != tc.want {
			t.Errorf("Validate(%q) = %v, want %q", tc.names, err, tc.want)
		}
	}
	for _, ok := range []ResourceNames{nil, names, {"gpus"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%q) = %v", ok, err)
		}
	}
}

func TestResourcesValidate(t *testing.T) {
	names := MemoryVCores()
	tests := []struct {
		r    Resources
		want string
	}{
		{Resources{1024}, `models: invalid resources: resources = [1024]: has 1 dimensions, want 2 [memory_mb vcores]`},
		{Resources{1024, -1}, `models: invalid resources: resources[1] = -1: negative vcores`},
	}
	for _, tc := range tests {
		err := tc.r.Validate(names)
		if !errors.Is(err, ErrInvalidResources) || err.Error() != tc.want {
			t.Errorf("Validate(%v) = %v, want %q", tc.r, err, tc.want)
		}
	}
	if err := (Resources{0, 0}).Validate(names); err != nil {
		t.Errorf("zero vector rejected: %v", err)
	}
}

func TestOccupancyAndByName(t *testing.T) {
	names := MemoryVCores()
	o := NewOccupancy(2)
	o.Add(Resources{1024, 1}, Resources{2048, 2}, MapTask)
	o.Add(Resources{512, 1}, Resources{512, 1}, ReduceTask)
	o.Add(Resources{512, 0}, Resources{512, 0}, 0)
	if !o.Requested.Equal(Resources{2048, 2}) || !o.Granted.Equal(Resources{3072, 3}) || o.MapSlots != 1 || o.ReduceSlots != 1 {
		t.Errorf("occupancy = %+v", o)
	}
	m := Resources{4096, 3}.ByName(names)
	if len(m) != 2 || m[names[0]] != 4096 || m[names[1]] != 3 {
		t.Errorf("ByName = %v", m)
	}
	if Resources(nil).ByName(names) != nil {
		t.Error("ByName of no amounts is not nil")
	}
}

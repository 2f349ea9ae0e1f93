package search

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/optd/optd/policy"
)

func TestSpaceMapping(t *testing.T) {
	sp := Space{
		{Name: "lin", Min: -2, Max: 6, Default: 0},
		{Name: "log", Min: 0.01, Max: 100, Default: 1, Log: true},
		{Name: "int", Min: 1, Max: 9, Default: 3, Integer: true},
	}
	if err := sp.Validate(); err != nil {
		t.Fatal(err)
	}
	x := sp.ToParams([]float64{0.5, 0.5, 0.5})
	if x[0] != 2 || math.Abs(x[1]-1) > 1e-12 || x[2] != 5 {
		t.Errorf("midpoint %v, want [2 1 5]", x)
	}
	if x := sp.ToParams([]float64{-3, 7, math.NaN()}); x[0] != -2 || x[1] != 100 || x[2] != 1 {
		t.Errorf("clamping gave %v", x)
	}
	def := sp.Defaults()
	back := sp.ToParams(sp.FromParams(def))
	for k := range def {
		if math.Abs(back[k]-def[k]) > 1e-9*math.Max(1, math.Abs(def[k])) {
			t.Errorf("%s: %v → %v", sp[k].Name, def[k], back[k])
		}
	}
}

func TestSpaceValidate(t *testing.T) {
	for _, sp := range []Space{
		nil,
		{{Name: "", Max: 1}},
		{{Name: "a", Max: 1}, {Name: "a", Max: 1}},
		{{Name: "a", Min: 2, Max: 1}},
		{{Name: "a", Min: 0, Max: 1, Default: 3}},
		{{Name: "a", Min: 0, Max: 1, Log: true}},
		{{Name: "a", Min: 0, Max: math.Inf(1)}},
	} {
		if err := sp.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: got %v, want ErrInvalid", sp, err)
		}
	}
}

func TestRestrict(t *testing.T) {
	sp := Space{
		{Name: "a", Min: 0, Max: 10, Default: 5},
		{Name: "n", Min: 1, Max: 100, Default: 50, Integer: true, Log: true},
	}
	got, err := sp.Restrict(" a = 1:2 , n=7")
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Min != 1 || got[0].Max != 2 || got[0].Default != 2 || got[1].Min != 7 || got[1].Max != 7 || got[1].Default != 7 {
		t.Errorf("restricted %+v", got)
	}
	if sp[0].Max != 10 {
		t.Error("Restrict modified its receiver")
	}
	for _, bad := range []string{"a", "=1", "b=1:2", "a=2:1", "a=-1:2", "a=x:2", "a=1:2,a=3", "n=1.5:3", "a=NaN", "a=1:inf"} {
		if _, err := sp.Restrict(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("%q: got %v, want ErrInvalid", bad, err)
		}
	}
}

func FuzzRestrict(f *testing.F) {
	for _, s := range []string{"a=1:2", "a=1:2,n=3", "n=1.5", "a=:", ",", "a=1e400"} {
		f.Add(s)
	}
	sp := Space{
		{Name: "a", Min: 0, Max: 10, Default: 5},
		{Name: "n", Min: 1, Max: 100, Default: 50, Integer: true, Log: true},
	}
	f.Fuzz(func(t *testing.T, spec string) {
		got, err := sp.Restrict(spec)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: error %v does not wrap ErrInvalid", spec, err)
			}
			return
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("%q: restricted space invalid: %v", spec, err)
		}
		for k := range got {
			if got[k].Min < sp[k].Min || got[k].Max > sp[k].Max {
				t.Fatalf("%q: %s widened to [%v, %v]", spec, got[k].Name, got[k].Min, got[k].Max)
			}
		}
	})
}

// TestSpaceOfLeavesFitSettings: a fitted policy's fit settings
// (policy.Param.Fixed) are not searched, so no candidate asks for a fit past
// the policy's work bound; its decision parameter is.
func TestSpaceOfLeavesFitSettings(t *testing.T) {
	for _, family := range []string{"adp-bid-price", "adp-penalty"} {
		sp, err := SpaceOf(family)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range sp {
			if (p.Min < p.Max) != (p.Name == "value_scale") {
				t.Errorf("%s: parameter %+v, want value_scale alone searched", family, p)
			}
		}
		// Named in --params, a fit setting takes the value given.
		r, err := sp.Restrict("fit_steps=7")
		if err != nil {
			t.Fatal(err)
		}
		if k := slices.IndexFunc(r, func(p policy.Param) bool { return p.Name == "fit_steps" }); k < 0 || r[k].Min != 7 || r[k].Max != 7 {
			t.Errorf("%s: fit_steps=7 gave %v", family, r)
		}
		if !slices.Contains(Families(), family) {
			t.Errorf("%s not among the searchable families %v", family, Families())
		}
	}
}

package benchmarks

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseCBCSolution(t *testing.T) {
	r, err := ParseCBCSolution(strings.NewReader("Optimal - objective value 11.00000000\n      0 x_0_1   3   3\n  ** 1 y   1   2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !r.Optimal || r.Objective != 11 || r.Values["x_0_1"] != 3 || r.Values["y"] != 1 {
		t.Errorf("got %+v", r)
	}
	r, err = ParseCBCSolution(strings.NewReader("Stopped on time - objective value 7.5\n"))
	if err != nil || r.Optimal || r.Status != "Stopped on time" || r.Objective != 7.5 {
		t.Errorf("stopped: %+v, %v", r, err)
	}
	for _, bad := range []string{"", "Optimal\n", "Optimal - objective value x\n", "Optimal - objective value 1\n 0 x\n", "Optimal - objective value 1\n 0 x nan?\n"} {
		if _, err := ParseCBCSolution(strings.NewReader(bad)); !errors.Is(err, errPeerOutput) {
			t.Errorf("%q: err = %v, want errPeerOutput", bad, err)
		}
	}
}

func TestParseGLPKOutput(t *testing.T) {
	r, err := ParseGLPKOutput([]byte("Problem:\nRows: 2\nStatus:     OPTIMAL\nObjective:  obj = 538.6666667 (MINimum)\n"))
	if err != nil || !r.Optimal || r.Objective != 538.6666667 {
		t.Errorf("got %+v, %v", r, err)
	}
	r, err = ParseGLPKOutput([]byte("Status:     UNDEFINED\nObjective:  obj = 0 (MINimum)\n"))
	if err != nil || r.Optimal {
		t.Errorf("undefined: %+v, %v", r, err)
	}
	for _, bad := range []string{"", "Status: OPTIMAL\n", "Status: OPTIMAL\nObjective: obj\n", "Status: OPTIMAL\nObjective: obj = \n", "Status: OPTIMAL\nObjective: obj = x\n"} {
		if _, err := ParseGLPKOutput([]byte(bad)); !errors.Is(err, errPeerOutput) {
			t.Errorf("%q: err = %v, want errPeerOutput", bad, err)
		}
	}
}

// FuzzParseCBCSolution: any input gives a result or an errPeerOutput error,
// never a panic; a result's values are numbers.
func FuzzParseCBCSolution(f *testing.F) {
	f.Add("Optimal - objective value 11.00000000\n      0 x   3   3\n")
	f.Add("Infeasible - objective value 0\n** 0 r 1 1\n")
	f.Add("Stopped on time - objective value 1e3\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseCBCSolution(strings.NewReader(s))
		if err != nil {
			if !errors.Is(err, errPeerOutput) && !strings.Contains(err.Error(), "token too long") {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		if r.Values == nil || (r.Optimal && !strings.HasPrefix(r.Status, "Optimal")) {
			t.Fatalf("inconsistent result %+v", r)
		}
	})
}

// FuzzParseGLPKOutput: any input gives a result with a status or an
// errPeerOutput error, never a panic.
func FuzzParseGLPKOutput(f *testing.F) {
	f.Add("Status:     OPTIMAL\nObjective:  obj = 11 (MAXimum)\n")
	f.Add("Status:     INTEGER OPTIMAL\nObjective:  obj = -1.5e+03 (MINimum)\n")
	f.Add("Objective:  obj = \n")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseGLPKOutput([]byte(s))
		if err != nil {
			if !errors.Is(err, errPeerOutput) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		if r.Optimal && r.Status != "OPTIMAL" && r.Status != "INTEGER OPTIMAL" {
			t.Fatalf("optimal with status %q", r.Status)
		}
		_ = math.IsNaN(r.Objective)
	})
}

package lp

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"
)

// fuzzValues are the floats a fuzz byte can select: ordinary numbers, bounds at and
// beyond MaxFiniteBound, infinities and NaN.
var fuzzValues = []float64{0, 1, -1, 2.5, -3, 7, 1e-9, 1e19, 1e20, -1e25, math.Inf(1), math.Inf(-1), math.NaN(), 4, -0.5, 100}

// problemFromBytes decodes arbitrary bytes into a Problem whose slices may have any
// length and whose indices and values may be anything; it never panics.
func problemFromBytes(data []byte) *Problem {
	pos := 0
	next := func() int {
		if pos >= len(data) {
			return 0
		}
		pos++
		return int(data[pos-1])
	}
	val := func() float64 { return fuzzValues[next()%len(fuzzValues)] }
	idx := func() int { return next()%12 - 2 } // −2 … 9
	floats := func(n int) []float64 {
		v := make([]float64, n)
		for k := range v {
			v[k] = val()
		}
		return v
	}
	// Nominal sizes, then each slice's length perturbed by a byte.
	m, n, nnz := next()%6, next()%6, next()%16
	length := func(nominal int) int {
		switch b := next(); {
		case b < 230:
			return nominal
		default:
			return max(0, nominal+b%5-2)
		}
	}
	p := &Problem{Sense: Sense(next() % 3)}
	p.Obj = floats(length(n))
	p.ColLower, p.ColUpper = floats(length(n)), floats(length(n))
	p.RowLower, p.RowUpper = floats(length(m)), floats(length(m))
	p.ColStart = make([]int, length(n+1))
	for k := range p.ColStart {
		if k > 0 {
			p.ColStart[k] = p.ColStart[k-1] + next()%4
		}
		if next() >= 240 {
			p.ColStart[k] = idx()
		}
	}
	p.RowIndex = make([]int, length(nnz))
	for k := range p.RowIndex {
		p.RowIndex[k] = idx()
	}
	p.Value = floats(length(nnz))
	return p
}

// FuzzProblemValidate checks that arbitrary problems never crash Validate or Solve,
// that Solve rejects exactly what Validate rejects, and that every solution it
// returns passes the optimality checks.
func FuzzProblemValidate(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 2, 4, 0})
	f.Add([]byte{3, 3, 6, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 2, 0, 1})
	f.Add([]byte{5, 5, 15, 1, 255, 255, 255, 12, 13, 10, 11, 9, 8, 7, 6, 5, 4, 3, 2, 1})
	f.Add([]byte{0, 4, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	f.Fuzz(func(t *testing.T, data []byte) {
		p := problemFromBytes(data)
		valid := p.Validate()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sol, err := Solve(ctx, p, Options{Algorithm: Algorithm(len(data) % 3)})
		if valid != nil {
			var ie *InputError
			if !errors.As(valid, &ie) || !errors.Is(err, ErrInvalidInput) || sol != nil {
				t.Fatalf("Validate = %v but Solve = %v, %v", valid, sol, err)
			}
			return
		}
		switch {
		case err == nil:
			if e := kktError(p, sol); e != nil {
				t.Fatalf("%v\n%+v", e, p)
			}
		case errors.Is(err, ErrInfeasible), errors.Is(err, ErrUnbounded), errors.Is(err, ErrNumerical):
			if sol != nil {
				t.Fatalf("solution returned with %v", err)
			}
		default:
			t.Fatalf("valid problem: unexpected error %v\n%+v", err, p)
		}
	})
}

package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// fuzzTol bounds the identities checked on every accepted workload.
const fuzzTol = 1e-9

// FuzzDecodeWorkload: DecodeWorkload never panics; every error wraps
// ErrInvalidWorkload as a *ValidationError; every accepted workload encodes,
// decodes again to an equal workload with a byte-identical encoding, and its
// conditionals are proper laws (Σ P[R=r] = 1, P[Y ∈ ℝ] = 1, E[Y·1{Y ≥ 0}] =
// E[Y], no NaN), and it samples values in range.
func FuzzDecodeWorkload(f *testing.F) {
	for _, file := range testdataJSON(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, c := range validationCases {
		f.Add([]byte(c.input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := DecodeWorkload(data, testdataDir)
		if err != nil {
			var ve *ValidationError
			if !errors.Is(err, ErrInvalidWorkload) || !errors.As(err, &ve) {
				t.Fatalf("error %v is not a *ValidationError wrapping ErrInvalidWorkload", err)
			}
			return
		}
		b1, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("accepted %q but cannot encode it: %v", data, err)
		}
		w2, err := DecodeWorkload(b1, testdataDir)
		if err != nil {
			t.Fatalf("accepted %q, encoded as %s, which is rejected: %v", data, b1, err)
		}
		if diff := equalWorkloads(w, w2); diff != "" {
			t.Fatalf("%q and its encoding %s decode differently: %s", data, b1, diff)
		}
		if b2, _ := json.Marshal(w2); !bytes.Equal(b1, b2) {
			t.Fatalf("re-encoding differs:\n%s\n%s", b1, b2)
		}
		checkWorkloadSane(t, w)
	})
}

func checkWorkloadSane(t *testing.T, w *Workload) {
	t.Helper()
	inf := math.Inf(1)
	conds := w.Conditionals()
	var sumP float64
	for _, c := range conds {
		sumP += c.Prob
	}
	// At most about 256 laws are checked (a uniform-int R has up to
	// MaxReducesLimit of them), spread evenly, the largest R included.
	stride := max(1, len(conds)/256)
	for i := len(conds) - 1; i >= 0; i -= stride {
		c := conds[i]
		y := c.Y
		m := y.Mean()
		if !(m >= 0) || math.IsInf(m, 0) {
			t.Fatalf("E[Y | R=%d] = %v", c.R, m)
		}
		if p := y.ProbIn(math.Inf(-1), inf); !scalar.EqualWithinAbs(p, 1, fuzzTol) {
			t.Fatalf("P[Y ∈ ℝ | R=%d] = %v", c.R, p)
		}
		if pm := y.PartialMean(0, inf); !scalar.EqualWithinAbsOrRel(pm, m, 1e-300, fuzzTol) {
			t.Fatalf("E[Y·1{Y ≥ 0} | R=%d] = %v, E[Y] = %v", c.R, pm, m)
		}
		for _, q := range []float64{0, m / 2, m, 2 * m} {
			if p, pm, cdf := y.ProbIn(q, 2*q+1), y.PartialMean(q, 2*q+1), y.CDF(q); math.IsNaN(p + pm + cdf) {
				t.Fatalf("NaN at %v: %v %v %v", q, p, pm, cdf)
			}
		}
	}
	if !scalar.EqualWithinAbs(sumP, 1, fuzzTol) {
		t.Fatalf("Σ P[R=r] = %v", sumP)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10 {
		x, r := w.Sample(rng)
		if !(x >= 0) || r < 1 || r > w.MaxReduces() {
			t.Fatalf("sample (%v, %d)", x, r)
		}
	}
}

package mdp

import (
	"context"
	"math"
	"testing"

	"github.com/optd/optd/policy"
	"github.com/optd/optd/sim"
)

// TestBigOthersTermsLump checks the big-others terms (B1) against the
// (n, w) queue terms, a second method for the same chain, job by job on
// both loads of the Fig. 9 setting beyond the paper: the indicator of a
// group ν of n is a function of (n, w) alone, so summed over the counts m
// of big others the terms of (ν, m) are exactly the (n, w) terms of ν
// summed over w (the projection is lumpable: same jumps of n, same rates);
// and summed over every bucket (g ≡ 1, whose generator is the killing
// −μ/n alone) they are −1 + ∫ μ/n dt, job i's compensated own departure,
// which the occupancy terms of its own departure sum to as well. The
// moves of m are checked by TestPenaltyFeaturesMeanZero (mean zero).
func TestBigOthersTermsLump(t *testing.T) {
	eachFig9Load(t, 600, func(rho string, b *penaltyBasis, tr *penaltyTrace, _ []sim.JobRecord) {
		if b.bigFeatures() == 0 {
			t.Fatalf("rho %s: no big-others terms", rho)
		}
		F, W, M := b.nFeat, b.wCap+1, b.bigCap+1
		bad := 0
		for i := range tr.jobs {
			f := tr.f[i*F : (i+1)*F]
			big := f[b.big : b.big+b.bigFeatures()]
			total := 0.0
			for nu := range b.nGrp {
				byM, byW := 0.0, 0.0
				for m := range M {
					byM += big[nu*M+m]
				}
				for w := range W {
					byW += f[nu*W+w]
				}
				if !near(byM, byW) && bad < 5 {
					bad++
					t.Errorf("rho %s, job %d, n-group %d: big-others terms sum to %.12g over m, the (n, w) terms to %.12g over w", rho, i, nu, byM, byW)
				}
				total += byM
			}
			own := 0.0
			for _, v := range f[b.occ+b.nrGrp : b.occ+2*b.nrGrp] {
				own += v
			}
			if !near(total, own) && bad < 5 {
				bad++
				t.Errorf("rho %s, job %d: big-others terms sum to %.12g, its own compensated departure is %.12g", rho, i, total, own)
			}
		}
		t.Logf("rho %s: %d jobs, %d big-others terms each", rho, len(tr.jobs), b.bigFeatures())
	})
}

// eachFig9Load calls check at both loads of the Fig. 9 setting beyond the
// paper (rho "0.6" and "0.9") with the compact basis with every optional
// feature (newPenaltyBasis), its features on one run of jobs arrivals (20
// of warm-up) with every job on the cheapest free slots, and that run's
// records.
func eachFig9Load(t *testing.T, jobs int, check func(rho string, b *penaltyBasis, tr *penaltyTrace, recs []sim.JobRecord)) {
	t.Helper()
	for _, rho := range []string{"0.6", "0.9"} {
		s, err := sim.LoadScenario("../search/testdata/fig9-rho" + rho + ".json")
		if err != nil {
			t.Fatal(err)
		}
		s.Jobs, s.WarmupJobs, s.Replications = jobs, 20, 1
		b, err := newPenaltyBasis(s, true)
		if err != nil {
			t.Fatal(err)
		}
		cheapest := []sim.NamedFactory{{Name: "c", New: func(uint64) (policy.Placement, error) { return cheapestFree{}, nil }}}
		r, err := replicate(context.Background(), s, 0, cheapest, false)
		if err != nil {
			t.Fatal(err)
		}
		check(rho, b, b.traceOf(r.Records), r.Records)
	}
}

// near says whether a and c agree to 1e-9 relative (and absolute near 0).
func near(a, c float64) bool { return math.Abs(a-c) <= 1e-9*(1+math.Abs(a)+math.Abs(c)) }

package mdp

import (
	"slices"
	"testing"

	"github.com/optd/optd/sim"
)

// TestWhoLeavesTerms checks the departure terms of "Who leaves" by two
// other methods, job by job on both loads of the Fig. 9 setting beyond the
// paper: the terms of every bin of Y (w = R·1{Y in bin}) sum over the bins
// to the occupancy term of the reducers the others free (w = R), slot-rank
// group by group; and the Y-weighted terms (w = Y·R) equal a direct
// computation from the records (every other job leaving in (S_i, E_i] by
// the reducers in service just before it leaves, minus the compensator
// summed segment by segment over the jobs in service), written without
// the featurizer's running sums. Their mean zero is
// TestPenaltyFeaturesMeanZero's.
func TestWhoLeavesTerms(t *testing.T) {
	eachFig9Load(t, 400, func(rho string, b *penaltyBasis, tr *penaltyTrace, recs []sim.JobRecord) {
		// newPenaltyBasis: R, Y·R, then every bin of Y.
		ws := b.depWeights()
		if len(ws) != 2+len(b.groupProb) || ws[1].kind != depYR {
			t.Fatalf("rho %s: departure families %v, want R, Y·R and %d bins", rho, ws, len(b.groupProb))
		}
		F, NB := b.nFeat, b.nrGrp
		family := func(f []float64, j int) []float64 {
			if j == 0 {
				return f[b.occ : b.occ+NB]
			}
			return f[b.occ+(j+1)*NB : b.occ+(j+2)*NB]
		}
		var in []sim.JobRecord
		for _, x := range recs {
			if !x.Lost {
				in = append(in, x)
			}
		}
		bad, nonzero := 0, 0
		for i, job := range tr.jobs {
			f := tr.f[i*F : (i+1)*F]
			for q := range NB {
				sum := 0.0
				for j := 2; j < len(ws); j++ {
					sum += family(f, j)[q]
				}
				if want := family(f, 0)[q]; !near(sum, want) && bad < 5 {
					bad++
					t.Errorf("rho %s, job %d, group %d: bins' terms sum to %.12g, the reducers freed %.12g", rho, i, q, sum, want)
				}
			}
			if i%4 != 0 { // the direct computation is quadratic: a quarter of the jobs
				continue
			}
			want := directYDepartures(b, in, job)
			for q, v := range family(f, 1) {
				if v != 0 {
					nonzero++
				}
				if !near(v, want[q]) && bad < 5 {
					bad++
					t.Errorf("rho %s, job %d, group %d: Y-weighted term %.12g, directly %.12g", rho, i, q, v, want[q])
				}
			}
		}
		if nonzero == 0 {
			t.Errorf("rho %s: every Y-weighted term is zero", rho)
		}
		t.Logf("rho %s: %d jobs, %d departure families of %d groups, %d nonzero Y-weighted terms checked directly", rho, len(tr.jobs), len(ws), NB, nonzero)
	})
}

// directYDepartures is the Y-weighted departure terms of job (in service
// over [Start, End)) computed from the records in of the jobs that
// entered service: at each time t, the jobs with Start ≤ t < End are in
// service.
func directYDepartures(b *penaltyBasis, in []sim.JobRecord, job TraceJob) []float64 {
	out := make([]float64, b.nrGrp)
	// in service just before t: Start < t ≤ End.
	before := func(t float64) (nr int) {
		for _, x := range in {
			if x.Start < t && t <= x.End {
				nr += x.R
			}
		}
		return nr
	}
	self := false
	for _, x := range in {
		if x.Start == job.Start && x.End == job.End && x.R == job.R && !self {
			self = true // job i itself
			continue
		}
		if job.Start < x.End && x.End <= job.End {
			out[b.nrBucket(before(x.End))] += x.Y() * float64(x.R)
		}
	}
	// The compensator between consecutive times where the jobs in service
	// change.
	cuts := []float64{job.Start, job.End}
	for _, x := range in {
		for _, c := range []float64{x.Start, x.End} {
			if job.Start < c && c < job.End {
				cuts = append(cuts, c)
			}
		}
	}
	slices.Sort(cuts)
	for k := 0; k+1 < len(cuts); k++ {
		a, c := cuts[k], cuts[k+1]
		if c <= a {
			continue
		}
		n, nr, w := 0, 0, 0.0
		for _, x := range in {
			if x.Start <= a && a < x.End {
				n++
				nr += x.R
				w += x.Y() * float64(x.R)
			}
		}
		out[b.nrBucket(nr)] -= b.mu / float64(n) * (c - a) * (w - job.Y*float64(job.R))
	}
	return out
}

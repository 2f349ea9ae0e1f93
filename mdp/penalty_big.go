package mdp

// # Big jobs in service (compact features)
//
// The rich queue terms (the groups of every other job in service) make a
// slot's value depend on who else is in service, but their chain is far
// too big at K = 100. A projection of it is still a Markov chain: with
// "big" the jobs of the top Y groups (group ≥ bigFrom, probability p of a
// job's mark), let m(t) be the number of OTHER jobs in service that are
// big, as job i sees them. Z(t) = (n(t), w(t), m(t)) is a continuous-time
// Markov chain while i is in service, whatever the placement:
//
//   - each job in service leaves at rate μ/n whatever the past (exponential
//     work, K-limited processor sharing), so a big other leaves at rate
//     m·μ/n and a small one at rate (n − 1 − m)·μ/n;
//   - the job that enters (on an arrival when n < K, or the head of the
//     queue when another leaves with w > 0) has a mark drawn i.i.d. from
//     the workload's law, unseen before it enters and independent of the
//     past, so it is big with probability p;
//   - job i itself leaves at rate μ/n (its term is killed).
//
// Hence, for a bounded g of Z, with Z_b⁺ = Z after a big other leaves and
// Z_s⁺ after a small one (n − 1 and m − 1 or m when nobody waits, else
// w − 1 and m − 1 + B or m + B, B ~ Bernoulli(p)) and Z_a after an arrival
// (n + 1 and m + B if n < K, else w + 1 if there is room, else Z),
//
//	(𝒢g)(Z) = −(μ/n)·g(Z) + m·(μ/n)·(E g(Z_b⁺) − g(Z))
//	          + (n − 1 − m)·(μ/n)·(E g(Z_s⁺) − g(Z)) + λ·(E g(Z_a) − g(Z)),
//
// and, as for the (n, w) terms (Dynkin's formula for "g(Z(t)) while i is in
// service, 0 after", optional stopping at E_i, E[E_i − S_i] < ∞),
//
//	q_{i,g} = −g(Z(S_i)) − ∫_{S_i}^{E_i} (𝒢g)(Z(t)) dt                    (B1)
//
// has E[q_{i,g} | F_{S_i}] = 0: (P1) holds and any θ keeps the bound. g
// ranges over the indicators of buckets (group of n, min(m, bigCap)): w
// is left out of the bucket (a function of Z may ignore a coordinate; the
// generator still moves w exactly). A trace gets none of these: its
// marks are numbers known in advance, so who enters is no fresh draw.
//
// What they add: the value of job i's slots (its coefficients, per class
// group and per its own Y group) may now depend on how many big jobs are
// in service beside it, which under a good policy hold the cheap slots
// and want i's when they free theirs; n alone cannot tell a crowd of
// small jobs from a few big ones. Measured, they did not lift the bound
// on the Fig. 9 setting at ρ = 0.9 (penaltyVariant), so FitPenalty adds
// them only when asked.

// penaltyBigCap is the largest count of big others with a bucket of its
// own (more share the last).
const penaltyBigCap = 5

// setBig turns the big-others terms on: big = the top third of the Y
// groups (at least one).
func (b *penaltyBasis) setBig() {
	G := len(b.groupProb)
	b.bigFrom = G - max(1, (G+2)/3)
	b.pBig = 0
	for q := b.bigFrom; q < G; q++ {
		b.pBig += b.groupProb[q]
	}
	b.bigCap = penaltyBigCap
}

// bigFeatures is the number of big-others terms (0 when off).
func (b *penaltyBasis) bigFeatures() int {
	if b.bigCap == 0 {
		return 0
	}
	return b.nGrp * (b.bigCap + 1)
}

// isBig says whether a job of group g is big (1) or not (0).
func (b *penaltyBasis) isBig(g int) int {
	if b.bigCap > 0 && g >= b.bigFrom {
		return 1
	}
	return 0
}

// bigBucket is the bucket of n in service (n ≥ 1) with m big others.
func (b *penaltyBasis) bigBucket(n, m int) int {
	return b.nGroup[n]*(b.bigCap+1) + min(m, b.bigCap)
}

// bigTerms adds (B1) for every bucket to f (f[0] the first big-others
// term) for a job of bigness own (0 or 1) in service over the segments
// times[ks:ke+1], where segment k has ns[k] in service, ws[k] waiting and
// bigs[k] big jobs in service (the job itself included).
func (b *penaltyBasis) bigTerms(f []float64, own, ks, ke int, times []float64, ns, ws, bigs []int) {
	f[b.bigBucket(ns[ks], bigs[ks]-own)]--
	p := b.pBig
	for k := ks; k < ke; k++ {
		n, w, m := ns[k], ws[k], bigs[k]-own
		dt := times[k+1] - times[k]
		nf := float64(n)
		here := b.bigBucket(n, m)
		// acc adds v·dt of (𝒢 1_b)(Z) to bucket b's integral, which (B1)
		// subtracts.
		acc := func(bk int, v float64) { f[bk] -= v * dt }
		acc(here, -b.mu/nf)
		for _, o := range [2]struct {
			rate float64
			dm   int
		}{
			{float64(m) * b.mu / nf, 1},       // a big other leaves
			{float64(n-1-m) * b.mu / nf, 0}} { // a small other leaves
			if o.rate <= 0 {
				continue
			}
			acc(here, -o.rate)
			mm := m - o.dm
			if w == 0 {
				acc(b.bigBucket(n-1, mm), o.rate)
				continue
			}
			acc(b.bigBucket(n, mm+1), o.rate*p)
			acc(b.bigBucket(n, mm), o.rate*(1-p))
		}
		if n < b.k {
			acc(here, -b.lambda)
			acc(b.bigBucket(n+1, m+1), b.lambda*p)
			acc(b.bigBucket(n+1, m), b.lambda*(1-p))
		}
		// n = K: an arrival waits (w + 1) or is lost; either way the
		// bucket, which ignores w, stays.
	}
}

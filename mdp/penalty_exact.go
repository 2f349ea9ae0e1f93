package mdp

import (
	"context"
	"fmt"
	"math"

	"github.com/optd/optd/solver/lp"
)

// # The exact fit (fitExact)
//
// At scale the bound is read on the exact slot costs through the
// Lagrangian relaxation of the penalized LP (boundLagrangian), while θ was
// fitted on the coarse cluster (coarsePenalty): a θ that raises the coarse
// LP need not raise the exact bound (on the Fig. 9 setting at ρ = 0.9,
// tying the coefficients raised the coarse fit LP from 160.8 to 164.5 per
// job and lowered the exact bound by 2.4). The Lagrangian gives the
// supergradient of the exact bound itself. For multipliers u and the
// penalty z_{i,c} = s_{i,grp(c)}, s_{i,b} = Σ_k θ_{b,g(i),k}·f_{i,k} (P4),
//
//	L(u, θ) = Σ_i R_i·u_i − Σ_c n_c·max_{I} Σ_{i∈I} (u_i − Y_i·H_c − z_{i,c})
//	        = min_{I_1..I_C} [Σ_i R_i·u_i − Σ_c n_c·Σ_{i∈I_c} (u_i − Y_i·H_c − z_{i,c})],
//
// the minimum over one packing I_c of pairwise disjoint intervals per class
// c. For fixed packings the bracket is affine in (u, θ): θ enters through
// +Σ_c n_c·Σ_{i∈I_c} z_{i,c} = Σ_i Σ_b x_{i,b}·s_{i,b}, with
//
//	x_{i,b} = Σ_{c: grp(c) = b} n_c·1{i ∈ I_c}
//
// the slots of group b the packings give job i. A minimum of affine
// functions is concave, and at the minimizing packings (the weighted
// interval packings lagrangian computes)
//
//	∂L/∂θ_{b,g,k} ∋ Σ_{i: g(i) = g} x_{i,b}·f_{i,k}                          (E1)
//
// is a supergradient of L(u, ·). The bound is LP(θ) = max_u L(u, θ), the
// maximum of a jointly concave function (concave in θ); (E1) taken at the
// maximizing u is a supergradient of LP(θ) (its u-part, the job rows'
// residuals R_i − Σ_b x_{i,b}, is then zero in the LP's primal sense).
// What the fit uses is weaker, and only a heuristic direction: the
// packings averaged over the later steps of lagrangian (groupAdj.packs),
// taken at different multipliers u_t. Their (E1) is exactly a
// supergradient of the averaged Lagrangian (1/T)·Σ_t L(u_t, ·), a concave
// function below LP(θ), not of LP(θ) itself; ergodic averaging recovers
// the LP's primal (job rows holding) only under step rules this one (Polyak
// with deflection) is not proven for, and a reviewer measured averaged
// packings off by up to 68% of R_i on a job's row, and the line of (E1)
// above LP at 19 of 120 perturbations. That costs only the climb's
// accuracy: whatever θ the fit ends at, the bound is evaluated with it
// fixed on runs apart from the training runs, every Lagrangian value
// being a valid bound, so (P3) holds as before.
// As for the coarse fit, the basis function of group 0 keeps θ = 0 (a
// constant added to every group's z adds R_i·s_i to every placement of
// job i: no change to the LP's choice, only a mean-zero shift).
//
// Cost: one Lagrangian per training run, linear in its jobs per step, as
// the evaluated bound's; the evaluation is unchanged. On the Fig. 9
// setting a step took less than half a coarse step's time, but the bound
// it fitted was no higher on long replications at ρ = 0.9 (penaltyVariant's
// doc), so it is an option (penaltyVariant.exactFit), not FitPenalty's
// default.

// penaltyExactIterations is the Lagrangian's budget per step of the exact
// fit (fitExact).
const penaltyExactIterations = 100

// exactFitStep returns the penalized Lagrangian of one training run tr on
// the exact costs and, per job of tr (nb numbers each; zero for the jobs
// of no length), the packings' slots per group of classes averaged over
// the second half of its steps (fitExact's x_{i,b}).
func (p *Penalty) exactFitStep(ctx context.Context, tr *penaltyTrace, iterations int) (float64, []float64, error) {
	F := p.basis.nFeat
	slotCosts := p.slotCosts()
	adj := &groupAdj{grp: p.grp, G: p.nb, packFrom: iterations / 2}
	var jobs []TraceJob
	var idx []int
	var row []float64
	for i, j := range tr.jobs {
		if j.End <= j.Start {
			continue
		}
		row = p.groupValues(tr.group[i], tr.f[i*F:(i+1)*F], row[:0])
		jobs = append(jobs, j)
		idx = append(idx, i)
		adj.s = append(adj.s, row...)
	}
	X := make([]float64, len(tr.jobs)*p.nb)
	if len(jobs) == 0 {
		return 0, X, nil
	}
	adj.packs = make([]float64, len(jobs)*p.nb)
	res, err := lagrangian(ctx, jobs, slotCosts, adj, LagrangeOptions{Iterations: iterations})
	if err != nil {
		return math.NaN(), nil, err
	}
	for k, i := range idx {
		copy(X[i*p.nb:(i+1)*p.nb], adj.packs[k*p.nb:(k+1)*p.nb])
	}
	return res.Bound, X, nil
}

// coarseFitStep solves the penalized LP of training run tr (step t) on
// p's classes (the coarse cluster when the penalty groups the classes)
// and returns its optimum, the slots of each basis function its primal
// gives each job of tr (x_{i,b} = Σ_c x_{i,c}·w_b(c), nb numbers per
// job), which jobs took part (of positive length, in a job group) and how
// many.
func (p *Penalty) coarseFitStep(ctx context.Context, tr *penaltyTrace, t int) (float64, []float64, []bool, int, error) {
	C, nb := p.cls.num(), p.nb
	adj := p.adjust(tr)
	var jobs []TraceJob
	var idx []int
	var jadj []float64
	in := make([]bool, len(tr.jobs))
	for i, j := range tr.jobs {
		if j.End > j.Start && tr.group[i] >= 0 {
			jobs = append(jobs, j)
			idx = append(idx, i)
			jadj = append(jadj, adj[i*C:(i+1)*C]...)
			in[i] = true
		}
	}
	h := &hindsightLP{cls: p.cls, p: &lp.Problem{Sense: lp.Minimize}, adj: jadj, colJob: []int32{}}
	if err := h.addTrace(jobs, nil); err != nil {
		return 0, nil, nil, 0, err
	}
	sol, err := lp.Solve(ctx, h.p, lp.Options{})
	if err != nil {
		return 0, nil, nil, 0, fmt.Errorf("mdp: penalty fit, step %d: %w", t, err)
	}
	X := make([]float64, len(tr.jobs)*nb)
	for col, x := range sol.Primal {
		i := idx[h.colJob[col]]
		c := col % C
		for b := range nb {
			X[i*nb+b] += x * p.w[c*nb+b]
		}
	}
	return sol.Objective, X, in, len(jobs), nil
}

package mdp

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestFig9AnalogValueRegression regresses the optimal policy's exact
// relative value h on the regular states of the Fig. 9 analogs
// (fig9Analogs) on families of features, weighted by the optimal chain's
// stationary law, and prints the share of h's placement-dependent spread
// (its weighted variance within the cells of (n, w, reducers in service),
// which no placement-free term can touch) that each family leaves
// (OPTD_PENALTY_ANALOG=1).
func TestFig9AnalogValueRegression(t *testing.T) {
	if os.Getenv("OPTD_PENALTY_ANALOG") == "" {
		t.Skip("set OPTD_PENALTY_ANALOG=1")
	}
	ctx := context.Background()
	scens, names := fig9Analogs(t, 1000, 1)
	for k, s := range scens {
		m, err := ModelOf(s)
		if err != nil {
			t.Fatal(err)
		}
		cls, err := m.validate()
		if err != nil {
			t.Fatal(err)
		}
		opts, _ := SolveOptions{}.withDefaults()
		d := discretize(m.Workload, opts.Bins)
		pm, err := buildPlacement(ctx, m, cls, d.upper, opts.MaxStates)
		if err != nil {
			t.Fatal(err)
		}
		sol, err := solveMDP(ctx, pm.m, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		pi := stationaryOf(pm.m, sol.Policy)
		fmt.Printf("%s (optimum %.3f per job)\n", names[k], pm.perJob(sol.Gain))
		analogRegression(pm, sol.Bias, pi)
	}
}

// stationaryOf is the stationary law of the chain under pol (lazy power
// iteration).
func stationaryOf(m *MDP, pol []int) []float64 {
	S := m.NumStates()
	pi := make([]float64, S)
	pi[0] = 1
	nx := make([]float64, S)
	for range 20000 {
		clear(nx)
		for s, p := range pi {
			if p == 0 {
				continue
			}
			next, prob := m.Transitions(pol[s])
			for j, ns := range next {
				nx[ns] += 0.5 * p * prob[j]
			}
			nx[s] += 0.5 * p
		}
		pi, nx = nx, pi
	}
	return pi
}

// analogRegression prints, per feature family, the weighted residual of h.
func analogRegression(pm *placementMDP, h, pi []float64) {
	C := pm.cls.num()
	maxR := 0
	for _, a := range pm.atoms {
		maxR = max(maxR, a.R)
	}
	type stateDesc struct {
		s       int
		n, w, N int
		occ     []int   // per class: slots held
		occR    [][]int // per class, per holder's R: slots held
		free    []int
		weight  float64
		pattern string
	}
	var sts []stateDesc
	for s, set := range pm.set {
		if pm.atomOf[s] >= 0 || pi[s] < 1e-12 {
			continue
		}
		d := stateDesc{s: s, n: len(set), w: int(pm.waiting[s]), occ: make([]int, C), weight: pi[s]}
		d.occR = make([][]int, C)
		for c := range C {
			d.occR[c] = make([]int, maxR+1)
		}
		for _, ty := range set {
			r := pm.types.r[ty]
			d.N += r
			for c, x := range pm.types.at(ty) {
				d.occ[c] += int(x)
				d.occR[c][r] += int(x)
			}
		}
		d.free = make([]int, C)
		for c := range C {
			d.free[c] = pm.cls.count[c] - d.occ[c]
		}
		d.pattern = fmt.Sprint(d.occ, d.w)
		sts = append(sts, d)
	}
	// Feature families: each a function of a state appending its features.
	type family struct {
		name string
		f    func(d stateDesc, out map[string]float64)
	}
	base := func(d stateDesc, out map[string]float64) {
		out[fmt.Sprint("nwN", d.n, d.w, d.N)] = 1
	}
	additive := func(d stateDesc, out map[string]float64) {
		base(d, out)
		for c, x := range d.occ {
			if x > 0 {
				out[fmt.Sprint("c-nw", c, d.n, d.w)] += float64(x)
				out[fmt.Sprint("c-N", c, d.N)] += float64(x)
			}
		}
	}
	cheapest := func(free []int, r int) float64 {
		v := 0.0
		for c := range free {
			take := min(free[c], r)
			v += float64(take) * pm.cls.cost[c]
			r -= take
			if r == 0 {
				return v
			}
		}
		return math.NaN()
	}
	fams := []family{
		{"placement-free: (n, w, N)", base},
		{"additive: class x (n, w) + class x N (the penalized LP's V)", additive},
		{"additive + class x holder's R x (n, w)", func(d stateDesc, out map[string]float64) {
			additive(d, out)
			for c := range C {
				for r, x := range d.occR[c] {
					if x > 0 {
						out[fmt.Sprint("cR-nw", c, r, d.n, d.w)] += float64(x)
					}
				}
			}
		}},
		{"additive + pairs of classes held", func(d stateDesc, out map[string]float64) {
			additive(d, out)
			for c := range C {
				for c2 := c + 1; c2 < C; c2++ {
					if d.occ[c] > 0 && d.occ[c2] > 0 {
						out[fmt.Sprint("pair", c, c2)] = float64(d.occ[c] * d.occ[c2])
					}
				}
			}
		}},
		{"additive + cost of the r cheapest free slots x (n, w)", func(d stateDesc, out map[string]float64) {
			additive(d, out)
			for r := 1; r <= maxR; r++ {
				if v := cheapest(d.free, r); !math.IsNaN(v) {
					out[fmt.Sprint("cheap", r, d.n, d.w)] = v
				} else {
					out[fmt.Sprint("nocheap", r, d.n, d.w)] = 1
				}
			}
		}},
		{"additive + cheapest free class x (n, w)", func(d stateDesc, out map[string]float64) {
			additive(d, out)
			for c := range C {
				if d.free[c] > 0 {
					out[fmt.Sprint("first", c, d.n, d.w)] = 1
					break
				}
			}
		}},
		{"any function of (slots held per class, w)", func(d stateDesc, out map[string]float64) {
			out["pattern"+d.pattern] = 1
		}},
	}
	// Reference: the weighted variance of h within the (n, w, N) cells
	// is the base family's residual.
	var baseRes float64
	for k, fam := range fams {
		idx := map[string]int{}
		rows := make([]map[string]float64, len(sts))
		for i, d := range sts {
			rows[i] = map[string]float64{}
			fam.f(d, rows[i])
			for name := range rows[i] {
				if _, ok := idx[name]; !ok {
					idx[name] = len(idx)
				}
			}
		}
		P := len(idx)
		A := mat.NewSymDense(P, nil)
		bv := mat.NewVecDense(P, nil)
		tot := 0.0
		for i, d := range sts {
			for n1, v1 := range rows[i] {
				j1 := idx[n1]
				bv.SetVec(j1, bv.AtVec(j1)+d.weight*v1*h[d.s])
				for n2, v2 := range rows[i] {
					j2 := idx[n2]
					if j2 >= j1 {
						A.SetSym(j1, j2, A.At(j1, j2)+d.weight*v1*v2)
					}
				}
			}
			tot += d.weight
		}
		for j := range P {
			A.SetSym(j, j, A.At(j, j)+1e-9*tot)
		}
		var beta mat.VecDense
		if err := beta.SolveVec(A, bv); err != nil {
			fmt.Printf("  %s: %v\n", fam.name, err)
			continue
		}
		res := 0.0
		for i, d := range sts {
			fit := 0.0
			for name, v := range rows[i] {
				fit += beta.AtVec(idx[name]) * v
			}
			res += d.weight * (h[d.s] - fit) * (h[d.s] - fit)
		}
		res /= tot
		if k == 0 {
			baseRes = res
		}
		fmt.Printf("  %-60s %5d features: RMS residual %8.3f, %5.1f%% of the placement-dependent variance left\n", fam.name, P, math.Sqrt(res), 100*res/baseRes)
	}
}

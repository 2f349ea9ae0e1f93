package mdp

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/optd/optd/sim"
	"github.com/optd/optd/solver/lp"
)

// This file fits the bid prices of the hindsight LP: the randomized-LP
// method of Talluri and van Ryzin ("A randomized linear programming method
// for computing network bid prices", Transportation Science 33(2), 1999)
// for the placement queue, with prices that depend on the queue's state.
//
// # The prices
//
// In the hindsight LP of one run (HindsightBound), with duals u_i of the
// job rows and v_{s,c} ≤ 0 of the capacity rows (maximal set s of jobs in
// service together, class c), the reduced cost of "one reducer of job i on
// class c" is Y_i·H_c − u_i − Σ_{s ∋ i} v_{s,c}, and at the optimum job i
// is on the classes where it is least. So
//
//	P_{i,c} = −Σ_{s ∋ i} v_{s,c} ≥ 0
//
// is what holding one slot of class c during i's service is worth to the
// other jobs, in hindsight: the clairvoyant placement puts i on the classes
// of least Y_i·H_c + P_{i,c}. An online policy does not know P, but the
// queue does not depend on the placement, so its conditional mean given
// what is known when i enters,
//
//	p_c(x) = E[P_{i,c} | the queue is in state x when i enters]        (B1)
//
// (x = (n in service counting i, w waiting)) is estimated by the sample
// mean over the jobs of training runs entering in state x, pooled with the
// neighbouring n while fewer than bidPoolSamples jobs entered in x. The policy then
// places an entering job on its R free slots of least Y·H + s·p(H, x) (p
// interpolated in H between the fitted classes' costs, s the value scale,
// see adp.go): the LP's rule with its prices replaced by their expectation.
// Unlike the penalty of penalty.go, no coefficient is searched for: a fit
// is one LP per training run and a mean, and its work is linear in the
// classes.
//
// # Classes where the prices are
//
// Prices are zero on the classes no maximal set fills. On a large cluster
// (1000 slots, a few dozen reducers in service) only the cheapest few
// hundred slots are ever contended, and an equal-size grouping of all
// slots would merge them into one or two classes with no price between
// them; the fit therefore groups the cheapest slots, as many as twice the
// most reducers the first training run had in service (at least 4·max R,
// at most all), into G classes of equal size, and the others into one
// more class (GroupCheapest).

// BidPrices are the fitted p_c(x) of (B1) on one grouping of the slots.
type BidPrices struct {
	cost       []float64 // the fitted classes' costs, ascending
	k          int
	nCap, wCap int
	price      [][]float64 // [bucket][class]
}

// bidPoolSamples is the least number of jobs a state's price is the mean
// over (see pooled).
const bidPoolSamples = 200

// bidMaxStates caps the states with their own prices (n up to bidMaxStates
// jobs in service, each with up to 3 waiting).
const bidMaxStates = 64

func (b *BidPrices) bucket(n, w int) int {
	return (min(max(n, 1), b.nCap)-1)*(b.wCap+1) + min(max(w, 0), b.wCap)
}

// Prices returns p_c(x) of every fitted class for a job entering with n in
// service (counting itself) and w waiting, and the classes' costs.
func (b *BidPrices) Prices(n, w int) (prices, costs []float64) {
	return b.price[b.bucket(min(n, b.k), w)], b.cost
}

// GroupCheapest returns the slot costs with the cheapest span slots grouped
// into groups classes of (nearly) equal size and the other slots into one
// more, each slot given its group's mean cost (GroupSlotCosts on each part).
func GroupCheapest(costs []float64, span, groups int) []float64 {
	idx := make([]int, len(costs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(costs[a], costs[b]) })
	span = min(max(span, 1), len(costs))
	// Extend the span over ties, so that equal costs stay in one part.
	for span < len(costs) && costs[idx[span]] == costs[idx[span-1]] {
		span++
	}
	part := func(ids []int, g int) {
		xs := make([]float64, len(ids))
		for k, i := range ids {
			xs[k] = costs[i]
		}
		xs = GroupSlotCosts(xs, g)
		for k, i := range ids {
			costs[i] = xs[k]
		}
	}
	costs = slices.Clone(costs)
	part(idx[:span], groups)
	part(idx[span:], 1)
	return costs
}

// entryStates returns, for every record that entered service, the number
// in service just after its entry (counting itself) and the number waiting.
func entryStates(recs []sim.JobRecord) (n, w []int) {
	var starts, ends, arrivals []float64
	for _, r := range recs {
		if r.Lost {
			continue
		}
		starts, ends, arrivals = append(starts, r.Start), append(ends, r.End), append(arrivals, r.Arrival)
	}
	slices.Sort(starts)
	slices.Sort(ends)
	slices.Sort(arrivals)
	upTo := func(xs []float64, t float64) int { return searchTime(xs, t, true) }
	n, w = make([]int, len(recs)), make([]int, len(recs))
	for k, r := range recs {
		if r.Lost {
			continue
		}
		t := r.Start
		n[k] = upTo(starts, t) - upTo(ends, t)
		w[k] = upTo(arrivals, t) - upTo(starts, t)
	}
	return n, w
}

// FitBidPrices estimates (B1) for scenario s (K, waiting room, workload and
// slot costs) with its slots grouped into groups classes (see above) from
// the records of runs training runs, run(t) giving the records of every
// arrival of run t.
func FitBidPrices(ctx context.Context, s *sim.Scenario, groups, runs int, run func(t int) ([]sim.JobRecord, error)) (*BidPrices, error) {
	if err := checkSlotCosts(s.SlotCosts); err != nil {
		return nil, err
	}
	if runs < 1 || groups < 1 {
		return nil, modelErr("runs, groups", fmt.Sprint(runs, ", ", groups), "must be ≥ 1")
	}
	first, err := run(0)
	if err != nil {
		return nil, fmt.Errorf("mdp: bid prices, training run 0: %w", err)
	}
	cls := newClasses(GroupCheapest(s.SlotCosts, ContendedSlots(first, s.Workload.MaxReduces()), groups))
	C := cls.num()
	b := &BidPrices{cost: cls.cost, k: s.K, nCap: min(s.K, bidMaxStates), wCap: 3}
	if s.MaxWaiting >= 0 {
		b.wCap = min(s.MaxWaiting, 3)
	}
	B := b.nCap * (b.wCap + 1)
	sum := make([][]float64, B)
	for k := range sum {
		sum[k] = make([]float64, C)
	}
	count := make([]int, B)
	for t := range runs {
		recs := first
		if t > 0 {
			if recs, err = run(t); err != nil {
				return nil, fmt.Errorf("mdp: bid prices, training run %d: %w", t, err)
			}
		}
		ns, ws := entryStates(recs)
		var jobs []TraceJob
		var state []int
		for k, r := range recs {
			if !r.Lost && r.End > r.Start {
				jobs = append(jobs, TraceJob{Start: r.Start, End: r.End, Y: r.Y(), R: r.R})
				state = append(state, b.bucket(ns[k], ws[k]))
			}
		}
		if len(jobs) == 0 {
			continue
		}
		h := &hindsightLP{cls: cls, p: &lp.Problem{Sense: lp.Minimize}, colJob: []int32{}}
		if err := h.addTrace(jobs, nil); err != nil {
			return nil, err
		}
		sol, err := lp.Solve(ctx, h.p, lp.Options{})
		if err != nil {
			return nil, fmt.Errorf("mdp: bid prices, training run %d: %w", t, err)
		}
		p := h.p
		seen := make([]bool, len(jobs))
		for col := range p.NumCols() {
			i := int(h.colJob[col])
			price := 0.0
			for k := p.ColStart[col]; k < p.ColStart[col+1]; k++ {
				if r := p.RowIndex[k]; p.RowLower[r] != p.RowUpper[r] {
					price -= sol.RowDuals[r] * p.Value[k]
				}
			}
			sum[state[i]][col%C] += price
			if !seen[i] {
				seen[i] = true
				count[state[i]]++
			}
		}
	}
	b.price = make([][]float64, B)
	for x := range B {
		b.price[x] = b.pooled(x, sum, count)
	}
	return b, nil
}

// ContendedSlots is how many of the cheapest slots the fits group finely:
// twice the most reducers in service at once in the run recs, at least
// 4·maxR.
func ContendedSlots(recs []sim.JobRecord, maxR int) int {
	return max(2*maxReducersInService(recs), 4*maxR)
}

// maxReducersInService is the most reducers in service at once in recs.
func maxReducersInService(recs []sim.JobRecord) int {
	type event struct {
		t float64
		d int
	}
	var evs []event
	for _, r := range recs {
		if !r.Lost {
			evs = append(evs, event{r.Start, r.R}, event{r.End, -r.R})
		}
	}
	// Ends before starts at equal times: a slot freed at t is free for a
	// job entering at t.
	slices.SortFunc(evs, func(a, b event) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.d, b.d)) })
	most, cur := 0, 0
	for _, e := range evs {
		cur += e.d
		most = max(most, cur)
	}
	return most
}

// pooled is the price of bucket x: the mean over the jobs of the states
// with its waiting count and n within a window around its own, the window
// widened until it holds bidPoolSamples jobs (a kernel estimate whose width
// follows the data: the states of few jobs, which the queue rarely
// visits, borrow from their neighbours, and the prices are smooth in n);
// with no job at that waiting count, the next lower count's; zero with no
// job at all.
func (b *BidPrices) pooled(x int, sum [][]float64, count []int) []float64 {
	n, w := x/(b.wCap+1)+1, x%(b.wCap+1)
	out := make([]float64, len(sum[x]))
	for ; w >= 0; w-- {
		total := 0
		for d := 0; d < b.nCap && total < bidPoolSamples; d++ {
			for _, nn := range []int{n - d, n + d}[:min(d, 1)+1] {
				if nn < 1 || nn > b.nCap {
					continue
				}
				y := b.bucket(nn, w)
				total += count[y]
				for c, v := range sum[y] {
					out[c] += v
				}
			}
		}
		if total > 0 {
			for c := range out {
				out[c] = max(out[c]/float64(total), 0)
			}
			return out
		}
	}
	return out
}

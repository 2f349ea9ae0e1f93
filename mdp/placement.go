package mdp

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// typeTable interns held sets: a held set is a vector of counts over the
// cost classes (slots of equal cost are interchangeable, so which slots of a
// class a job holds does not matter).
type typeTable struct {
	C     int
	vec   []uint16 // vector t is vec[t*C : (t+1)*C]
	r     []int
	cost  []float64 // H(a) = Σ_c cost_c·a_c
	index map[string]int32
	key   []byte
}

func newTypeTable(C int) *typeTable { return &typeTable{C: C, index: map[string]int32{}} }

// id returns the id of vector a, interning it if new.
func (tt *typeTable) id(a []int, cls *classes) int32 {
	tt.key = tt.key[:0]
	for _, x := range a {
		tt.key = binary.LittleEndian.AppendUint16(tt.key, uint16(x))
	}
	if t, ok := tt.index[string(tt.key)]; ok {
		return t
	}
	t := int32(len(tt.r))
	tt.index[string(tt.key)] = t
	r, h := 0, 0.0
	for c, x := range a {
		tt.vec = append(tt.vec, uint16(x))
		r += x
		h += float64(x) * cls.cost[c]
	}
	tt.r = append(tt.r, r)
	tt.cost = append(tt.cost, h)
	return t
}

func (tt *typeTable) at(t int32) []uint16 { return tt.vec[int(t)*tt.C : (int(t)+1)*tt.C] }

// placementMDP is the reduce-placement MDP of the stable system with its
// state descriptions.
//
// Regular states (M, w): M the multiset of held sets of the jobs in service
// (a sorted list of type ids, |M| = n ≤ K), w the number waiting. One step
// of the chain uniformized at rate Λ = λ + μ: an arrival (probability λ/Λ)
// enters service if n < K (then w = 0), else waits if w < W, else is lost; a
// departure (probability μ/Λ, a self-loop when n = 0) removes one of the n
// jobs in service, each with probability 1/n, and the head of the queue
// enters service if w > 0.
//
// Decision states (M, w, k): a job of atom k = (y, r) enters service and
// finds M in service and w waiting behind it. Action a: a vector of class
// counts with a ≤ free(M) and Σa = r, at cost y·H(a) (plus the ray term of
// discretize); it moves to the regular state (M ⊎ {a}, w) with probability 1.
//
// A decision state is an extra step of the discrete-time chain inserted at
// each entry; see SolvePlacement for why this does not change the cost per
// job.
type placementMDP struct {
	model PlacementModel
	cls   *classes
	atoms []atom
	types *typeTable
	m     *MDP

	regular  map[string]int32 // key(M, w) → state
	decision map[string]int32 // key(M, w, k) → decision state
	set      [][]int32        // M of each state
	waiting  []int32          // w of each state
	atomOf   []int32          // atom of a decision state, -1 for a regular one
	actType  []int32          // type id placed by each action, -1 for regular states
	free     [][]int          // free counts per class of each decision state (nil for regular)

	entry float64 // e: entries per step of the uniformized chain
}

// decisionFraction returns e/(1+e), the long-run fraction of steps that are
// decision steps.
func (p *placementMDP) decisionFraction() float64 { return p.entry / (1 + p.entry) }

// perJob converts an average cost per step of the chain into the long-run
// mean cost per job that entered service.
func (p *placementMDP) perJob(g float64) float64 { return g / p.decisionFraction() }

func stateKey(buf []byte, set []int32, w int32) []byte {
	buf = binary.LittleEndian.AppendUint16(buf[:0], uint16(w))
	for _, t := range set {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(t))
	}
	return buf
}

// decisionKey is the key of the decision state of (set, w) for atom k:
// stateKey's with k appended.
func decisionKey(buf []byte, set []int32, w, k int32) []byte {
	return binary.LittleEndian.AppendUint32(stateKey(buf, set, w), uint32(k))
}

// buildPlacement enumerates the states reachable from the empty system and
// builds the MDP. It fails with ErrTooLarge beyond maxStates states (or
// when one decision state alone has more than maxStates actions).
func buildPlacement(ctx context.Context, model PlacementModel, cls *classes, atoms []atom, maxStates int) (*placementMDP, error) {
	p := &placementMDP{
		model: model, cls: cls, atoms: atoms, types: newTypeTable(cls.num()),
		regular: map[string]int32{}, decision: map[string]int32{}, entry: model.entryRate(),
	}
	var key []byte
	newState := func(set []int32, w int32, k int32) int32 {
		s := int32(len(p.set))
		p.set = append(p.set, set)
		p.waiting = append(p.waiting, w)
		p.atomOf = append(p.atomOf, k)
		return s
	}
	tooLarge := func() error {
		return fmt.Errorf("%w: more than %d states (SolveOptions.MaxStates)", ErrTooLarge, maxStates)
	}
	regularState := func(set []int32, w int32) (int32, error) {
		key = stateKey(key, set, w)
		if s, ok := p.regular[string(key)]; ok {
			return s, nil
		}
		if len(p.set) >= maxStates {
			return 0, tooLarge()
		}
		s := newState(set, w, -1)
		p.regular[string(key)] = s
		return s, nil
	}
	decisionState := func(set []int32, w, k int32) (int32, error) {
		key = decisionKey(key, set, w, k)
		if s, ok := p.decision[string(key)]; ok {
			return s, nil
		}
		if len(p.set) >= maxStates {
			return 0, tooLarge()
		}
		s := newState(set, w, k)
		p.decision[string(key)] = s
		return s, nil
	}
	lam, mu := model.Lambda, model.Mu
	pa, pd := lam/(lam+mu), mu/(lam+mu)
	K, W := model.K, int32(model.MaxWaiting)

	b := NewBuilder()
	if _, err := regularState(nil, 0); err != nil {
		return nil, err
	}
	var next []int
	var prob []float64
	free := make([]int, cls.num())
	for s := 0; s < len(p.set); s++ {
		if s&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("mdp: building the placement MDP: %w", err)
			}
		}
		set, w, k := p.set[s], p.waiting[s], p.atomOf[s]
		b.AddState()
		if k >= 0 {
			// Decision: place a job of atom k.
			at := p.atoms[k]
			copy(free, cls.count)
			for _, t := range set {
				for c, x := range p.types.at(t) {
					free[c] -= int(x)
				}
			}
			if n := countSubsets(free, at.R, maxStates); n > maxStates {
				return nil, fmt.Errorf("%w: a decision has more than %d placements (SolveOptions.MaxStates)", ErrTooLarge, maxStates)
			}
			p.free = append(p.free, nil)
			p.free[s] = slices.Clone(free)
			ray := 0.0
			if at.Ray > 0 {
				ray = at.Ray * cls.cheapest(free, at.R)
			}
			var err error
			eachSubset(free, at.R, func(a []int) bool {
				t := p.types.id(a, cls)
				to := insertSorted(set, t)
				var ns int32
				if ns, err = regularState(to, w); err != nil {
					return false
				}
				b.AddAction(at.Y*p.types.cost[t]+ray, []int{int(ns)}, []float64{1})
				p.actType = append(p.actType, t)
				return true
			})
			if err != nil {
				return nil, err
			}
			continue
		}
		p.free = append(p.free, nil)
		next, prob = next[:0], prob[:0]
		add := func(ns int32, pr float64) {
			next = append(next, int(ns))
			prob = append(prob, pr)
		}
		n := len(set)
		// Arrival.
		switch {
		case n < K:
			for ka, at := range p.atoms {
				ds, err := decisionState(set, 0, int32(ka))
				if err != nil {
					return nil, err
				}
				add(ds, pa*at.Prob)
			}
		case w < W:
			rs, err := regularState(set, w+1)
			if err != nil {
				return nil, err
			}
			add(rs, pa)
		default:
			add(int32(s), pa)
		}
		// Departure.
		if n == 0 {
			add(int32(s), pd)
		}
		for i := 0; i < n; {
			j := i
			for j < n && set[j] == set[i] {
				j++
			}
			rest := slices.Concat(set[:i], set[i+1:])
			pr := pd * float64(j-i) / float64(n)
			if w > 0 {
				for ka, at := range p.atoms {
					ds, err := decisionState(rest, w-1, int32(ka))
					if err != nil {
						return nil, err
					}
					add(ds, pr*at.Prob)
				}
			} else {
				rs, err := regularState(rest, 0)
				if err != nil {
					return nil, err
				}
				add(rs, pr)
			}
			i = j
		}
		b.AddAction(0, next, prob)
		p.actType = append(p.actType, -1)
	}
	m, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("mdp: placement MDP: %w", err)
	}
	p.m = m
	return p, nil
}

// insertSorted returns a new sorted slice: set with t added.
func insertSorted(set []int32, t int32) []int32 {
	i, _ := slices.BinarySearch(set, t)
	out := make([]int32, 0, len(set)+1)
	out = append(out, set[:i]...)
	out = append(out, t)
	return append(out, set[i:]...)
}

// greedyPolicy returns the deterministic policy that places every job on the
// cheapest free slots (the first action of every decision state, by the
// order of eachSubset).
func (p *placementMDP) greedyPolicy() Policy {
	S := p.m.NumStates()
	act := make([]int, S)
	for s := range S {
		act[s], _ = p.m.ActionRange(s)
	}
	return Policy{Action: act}
}

// randomPolicy returns the randomized policy that places every job on a
// uniformly random R-subset of the free slots: class vector a has
// probability Π_c C(f_c, a_c) / C(F, R).
func (p *placementMDP) randomPolicy() Policy {
	S := p.m.NumStates()
	pol := Policy{Action: make([]int, S), Mix: make([][]float64, S)}
	for s := range S {
		lo, hi := p.m.ActionRange(s)
		pol.Action[s] = lo
		if p.atomOf[s] < 0 {
			continue
		}
		free := p.free[s]
		w := make([]float64, hi-lo)
		sum := 0.0
		for a := lo; a < hi; a++ {
			lw := 0.0
			for c, x := range p.types.at(p.actType[a]) {
				lw += logChoose(free[c], int(x))
			}
			w[a-lo] = lw
		}
		top := slices.Max(w)
		for i := range w {
			w[i] = math.Exp(w[i] - top)
			sum += w[i]
		}
		for i := range w {
			w[i] /= sum
		}
		pol.Mix[s] = w
	}
	return pol
}

// logChoose returns log C(n, k).
func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

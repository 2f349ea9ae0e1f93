package mdp

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/internal/errkind"
)

// Sentinel errors of the package. Errors wrap them with %w.
var (
	// ErrInvalidMDP is wrapped by every error about a malformed MDP, policy or
	// option.
	ErrInvalidMDP = errkind.New(errkind.Invalid, "mdp: invalid input")
	// ErrNotConverged is returned when an iterative method reaches its
	// iteration limit before its tolerance.
	ErrNotConverged = errkind.New(errkind.Internal, "mdp: not converged")
	// ErrMultichain is returned when a policy's chain has more than one
	// recurrent class, so that its average cost depends on the initial state.
	ErrMultichain = errkind.New(errkind.Internal, "mdp: the chain is not unichain")
	// ErrTooLarge is returned when a model has more states than
	// SolveOptions.MaxStates (or an MDP more than the dense limit of a method).
	ErrTooLarge = errkind.New(errkind.Invalid, "mdp: too many states")
)

// probSumTolerance is how far from 1 the transition probabilities of one action
// may sum (they are then renormalized).
const probSumTolerance = 1e-9

// MDP is a finite Markov decision process with state-dependent action sets,
// stored compactly: the actions of state s are the indices
// ActionRange(s) = [lo, hi) into flat arrays, and action a has an expected
// one-step cost c(a) and a sparse transition distribution P(·|a) stored the
// same way. Actions are numbered globally (0 ≤ a < NumActions()), so a policy
// is a slice of action indices, one per state.
//
// The criterion is the long-run average cost per step,
//
//	g^π = lim_{T→∞} (1/T)·E^π[Σ_{t<T} c(a_t)],
//
// for unichain MDPs (every deterministic stationary policy has a single
// recurrent class; the placement MDP is, since the empty cluster is reached
// from every state under every policy). The optimal g* and a bias h solve the
// optimality equation
//
//	g* + h(s) = min_{a ∈ A(s)} [ c(a) + Σ_{s'} P(s'|a)·h(s') ].   (Puterman 8.4.1)
//
// Build an MDP with a Builder. An MDP is immutable and safe for concurrent use.
type MDP struct {
	actStart []int     // len S+1: actions of s are actStart[s]..actStart[s+1]
	cost     []float64 // len A
	trStart  []int     // len A+1: transitions of a are trStart[a]..trStart[a+1]
	next     []int32   // len T
	prob     []float64 // len T
}

// NumStates returns the number of states S.
func (m *MDP) NumStates() int { return len(m.actStart) - 1 }

// NumActions returns the total number of actions over all states.
func (m *MDP) NumActions() int { return len(m.cost) }

// NumTransitions returns the total number of stored transitions (nonzeros).
func (m *MDP) NumTransitions() int { return len(m.next) }

// ActionRange returns the actions of state s: the indices lo ≤ a < hi.
func (m *MDP) ActionRange(s int) (lo, hi int) { return m.actStart[s], m.actStart[s+1] }

// Cost returns the expected one-step cost c(a) of action a.
func (m *MDP) Cost(a int) float64 { return m.cost[a] }

// Transitions returns the successors of action a and their probabilities (no
// successor twice, probabilities > 0 summing to 1). The slices are shared:
// do not modify them.
func (m *MDP) Transitions(a int) (next []int32, prob []float64) {
	lo, hi := m.trStart[a], m.trStart[a+1]
	return m.next[lo:hi:hi], m.prob[lo:hi:hi]
}

// StateOf returns the state that owns action a.
func (m *MDP) StateOf(a int) int {
	s, found := slices.BinarySearch(m.actStart, a)
	if found {
		// actStart[s] == a; states without actions do not exist, so s owns a.
		return s
	}
	return s - 1
}

// q returns c(a) + Σ P(s'|a)·h(s').
func (m *MDP) q(a int, h []float64) float64 {
	v := m.cost[a]
	for k := m.trStart[a]; k < m.trStart[a+1]; k++ {
		v += m.prob[k] * h[m.next[k]]
	}
	return v
}

// Builder assembles an MDP state by state: AddState opens a state, AddAction
// appends an action to the state opened last. Transitions may name states not
// added yet; Build checks that every successor exists.
type Builder struct {
	m   MDP
	err error
	buf []transition
}

type transition struct {
	next int32
	prob float64
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{m: MDP{actStart: []int{0}, trStart: []int{0}}}
}

// AddState opens a new state and returns its index.
func (b *Builder) AddState() int {
	b.m.actStart = append(b.m.actStart, len(b.m.cost))
	return len(b.m.actStart) - 2
}

// AddAction appends to the last state an action with expected cost c whose
// successor is next[k] with probability prob[k]. Repeated successors are
// merged, zero probabilities dropped, and probabilities summing to 1 within
// 1e-9 renormalized. It returns the action's global index. Errors (no state
// open, negative or non-finite values, a bad sum) are reported by Build.
func (b *Builder) AddAction(c float64, next []int, prob []float64) int {
	a := len(b.m.cost)
	s := len(b.m.actStart) - 2
	switch {
	case s < 0:
		b.fail("AddAction before AddState")
	case len(next) != len(prob):
		b.fail("state %d action %d: %d successors but %d probabilities", s, a, len(next), len(prob))
		return a
	case math.IsNaN(c) || math.IsInf(c, 0):
		b.fail("state %d action %d: cost %v is not finite", s, a, c)
	}
	b.buf = b.buf[:0]
	sum := 0.0
	for k, p := range prob {
		if !(p >= 0) || math.IsInf(p, 0) || next[k] < 0 || next[k] > math.MaxInt32 {
			b.fail("state %d action %d: successor %d with probability %v", s, a, next[k], p)
			continue
		}
		sum += p
		if p > 0 {
			b.buf = append(b.buf, transition{int32(next[k]), p})
		}
	}
	if math.Abs(sum-1) > probSumTolerance {
		b.fail("state %d action %d: probabilities sum to %v, not 1", s, a, sum)
	}
	slices.SortFunc(b.buf, func(x, y transition) int { return cmp.Compare(x.next, y.next) })
	merged := b.buf[:0]
	for _, t := range b.buf {
		if n := len(merged); n > 0 && merged[n-1].next == t.next {
			merged[n-1].prob += t.prob
			continue
		}
		merged = append(merged, t)
	}
	for _, t := range merged {
		b.m.next = append(b.m.next, t.next)
		b.m.prob = append(b.m.prob, t.prob/sum)
	}
	b.m.cost = append(b.m.cost, c)
	b.m.trStart = append(b.m.trStart, len(b.m.next))
	if s >= 0 {
		b.m.actStart[s+1] = len(b.m.cost)
	}
	return a
}

func (b *Builder) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf("%w: %s", ErrInvalidMDP, fmt.Sprintf(format, args...))
	}
}

// Build returns the MDP, or an error wrapping ErrInvalidMDP if an action was
// malformed, a state has no action, or a successor does not exist. The
// Builder must not be used afterwards.
func (b *Builder) Build() (*MDP, error) {
	if b.err != nil {
		return nil, b.err
	}
	m := new(MDP)
	*m = b.m
	S := m.NumStates()
	if S == 0 {
		return nil, fmt.Errorf("%w: no states", ErrInvalidMDP)
	}
	for s := range S {
		if m.actStart[s+1] == m.actStart[s] {
			return nil, fmt.Errorf("%w: state %d has no action", ErrInvalidMDP, s)
		}
	}
	for k, n := range m.next {
		if int(n) >= S {
			a := sortSearch(m.trStart, k)
			return nil, fmt.Errorf("%w: action %d of state %d goes to state %d, but there are %d states",
				ErrInvalidMDP, a, m.StateOf(a), n, S)
		}
	}
	b.m = MDP{}
	return m, nil
}

// sortSearch returns the segment i with start[i] ≤ k < start[i+1].
func sortSearch(start []int, k int) int {
	i, found := slices.BinarySearch(start, k)
	if found {
		for i+1 < len(start) && start[i+1] == k {
			i++
		}
		return i
	}
	return i - 1
}

// Policy is a stationary policy: Action[s] is the action (a global index in
// ActionRange(s)) that a deterministic policy takes in state s. A randomized
// policy sets Mix[s] to the probabilities of the actions lo..hi-1 of state s
// (Action[s] is then ignored); Mix may be nil, and Mix[s] nil for a state
// where the policy is deterministic.
type Policy struct {
	Action []int
	Mix    [][]float64
}

// check validates p against m.
func (p Policy) check(m *MDP) error {
	S := m.NumStates()
	if len(p.Action) != S {
		return fmt.Errorf("%w: policy has %d actions for %d states", ErrInvalidMDP, len(p.Action), S)
	}
	if p.Mix != nil && len(p.Mix) != S {
		return fmt.Errorf("%w: policy has %d mixtures for %d states", ErrInvalidMDP, len(p.Mix), S)
	}
	for s := range S {
		lo, hi := m.ActionRange(s)
		if p.Mix != nil && p.Mix[s] != nil {
			w := p.Mix[s]
			if len(w) != hi-lo {
				return fmt.Errorf("%w: state %d: mixture of %d weights for %d actions", ErrInvalidMDP, s, len(w), hi-lo)
			}
			sum := 0.0
			for _, x := range w {
				if !(x >= 0) {
					return fmt.Errorf("%w: state %d: mixture weight %v", ErrInvalidMDP, s, x)
				}
				sum += x
			}
			if math.Abs(sum-1) > probSumTolerance {
				return fmt.Errorf("%w: state %d: mixture sums to %v", ErrInvalidMDP, s, sum)
			}
			continue
		}
		if a := p.Action[s]; a < lo || a >= hi {
			return fmt.Errorf("%w: state %d: action %d is not in [%d, %d)", ErrInvalidMDP, s, a, lo, hi)
		}
	}
	return nil
}

// chainOf collapses m under p into its Markov chain, an MDP with one action
// per state (action s of state s).
func chainOf(m *MDP, p Policy) *MDP {
	S := m.NumStates()
	ch := &MDP{actStart: make([]int, S+1), cost: make([]float64, S), trStart: make([]int, 1, S+1)}
	row := map[int32]float64{}
	var keys []int32
	for s := range S {
		ch.actStart[s+1] = s + 1
		if p.Mix != nil && p.Mix[s] != nil {
			lo, _ := m.ActionRange(s)
			clear(row)
			// Policy.check accepts weights summing to 1 within 1e-9: each
			// row is renormalized so that the chain is stochastic to
			// rounding (the exact evaluation reads a state's self-loop as
			// 1 − the rest).
			total := 0.0
			for _, w := range p.Mix[s] {
				total += w
			}
			for i, w := range p.Mix[s] {
				if w == 0 {
					continue
				}
				w /= total
				a := lo + i
				ch.cost[s] += w * m.cost[a]
				next, prob := m.Transitions(a)
				for k, n := range next {
					row[n] += w * prob[k]
				}
			}
			keys = keys[:0]
			for n := range row {
				keys = append(keys, n)
			}
			slices.Sort(keys)
			for _, n := range keys {
				ch.next = append(ch.next, n)
				ch.prob = append(ch.prob, row[n])
			}
		} else {
			a := p.Action[s]
			ch.cost[s] = m.cost[a]
			next, prob := m.Transitions(a)
			ch.next = append(ch.next, next...)
			ch.prob = append(ch.prob, prob...)
		}
		ch.trStart = append(ch.trStart, len(ch.next))
	}
	return ch
}

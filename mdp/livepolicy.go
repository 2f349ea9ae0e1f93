package mdp

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/optd/optd/policy"
)

// OptimalPolicyName is the registry name of the MDP's optimal decision rule.
const OptimalPolicyName = "mdp-optimal"

// OptimalSolve is what SolveOptimal reports of its MDP besides the policy.
type OptimalSolve struct {
	// States is the number of MDP states (regular and decision states).
	States int
	// MemoryBytes is the estimated memory of the MDP and its bias.
	MemoryBytes int64
	// Exact reports that the workload's law of Y was used as is (see
	// SolvePlacement).
	Exact bool
}

// SolveOptimal solves m for its optimal decision rule alone: the same MDP
// (the upper discretization), the same method and so the same bias and
// the same decisions as SolvePlacement's Policy, without the lower
// bracket and the greedy and random evaluations SolvePlacement adds for
// the bound. It fails with ErrTooLarge beyond opts.MaxStates states or
// when the built MDP's estimated memory exceeds maxBytes (> 0), naming
// the limit and the value, and with ctx's error when ctx ends first.
func SolveOptimal(ctx context.Context, m PlacementModel, opts SolveOptions, maxBytes int64) (policy.Placement, OptimalSolve, error) {
	cls, err := m.validate()
	if err != nil {
		return nil, OptimalSolve{}, err
	}
	if opts, err = opts.withDefaults(); err != nil {
		return nil, OptimalSolve{}, err
	}
	d := discretize(m.Workload, opts.Bins)
	pm, err := buildPlacement(ctx, m, cls, d.upper, opts.MaxStates)
	if err != nil {
		return nil, OptimalSolve{}, err
	}
	info := OptimalSolve{States: pm.m.NumStates(), MemoryBytes: pm.approxBytes(), Exact: d.exact}
	if maxBytes > 0 && info.MemoryBytes > maxBytes {
		return nil, info, fmt.Errorf("%w: the MDP of %d states and %d actions needs about %d MB, more than the limit of %d MB",
			ErrTooLarge, info.States, pm.m.NumActions(), mb(info.MemoryBytes), mb(maxBytes))
	}
	sol, err := solveMDP(ctx, pm.m, opts, opts.Progress)
	if err != nil {
		return nil, info, err
	}
	return newOptimalPolicy(pm, sol.Bias), info, nil
}

func mb(bytes int64) int64 { return (bytes + 1<<20 - 1) >> 20 }

// approxBytes estimates the memory the solved MDP keeps: the MDP's flat
// arrays (8 bytes per state and per action offset and cost, 12 per
// transition), the action types, and per state its held set, waiting
// count, atom, free counts, its key in the state index and its bias
// (about 8 bytes per class and job in service plus 100 of overhead).
func (p *placementMDP) approxBytes() int64 {
	S, A, T := int64(p.m.NumStates()), int64(p.m.NumActions()), int64(p.m.NumTransitions())
	C, K := int64(p.cls.num()), int64(p.model.K)
	return 8*S + 16*A + 4*A + 12*T + S*(100+8*C+8*K)
}

// request builds the PlacementRequest of decision state s: the jobs in
// service hold the lowest slot indices of each class, in the order of the
// state's held sets.
func (p *placementMDP) request(s int) *policy.PlacementRequest {
	set, w, at := p.set[s], p.waiting[s], p.atoms[p.atomOf[s]]
	cls := p.cls
	used := make([]int, cls.num())
	held := make([][]int, len(set))
	for j, t := range set {
		for c, x := range p.types.at(t) {
			held[j] = append(held[j], cls.slots[c][used[c]:used[c]+int(x)]...)
			used[c] += int(x)
		}
		slices.Sort(held[j])
	}
	var free []policy.Slot
	for c := range cls.num() {
		for _, i := range cls.slots[c][used[c]:] {
			free = append(free, policy.Slot{Index: i, Cost: cls.cost[c]})
		}
	}
	return &policy.PlacementRequest{
		Free: free, X: at.Y * float64(at.R), R: at.R,
		JobsInSystem: len(set) + int(w), Waiting: int(w), Held: held,
	}
}

// policyOf asks pl for its decision in every decision state.
func (p *placementMDP) policyOf(ctx context.Context, pl policy.Placement) (Policy, error) {
	S := p.m.NumStates()
	act := make([]int, S)
	counts := make([]int, p.cls.num())
	for s := range S {
		lo, hi := p.m.ActionRange(s)
		act[s] = lo
		if p.atomOf[s] < 0 {
			continue
		}
		if s&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return Policy{}, fmt.Errorf("mdp: asking %s: %w", pl.Name(), err)
			}
		}
		req := p.request(s)
		dec, err := pl.Place(req)
		if err != nil {
			return Policy{}, fmt.Errorf("mdp: policy %s: %w", pl.Name(), err)
		}
		if err := checkPositions(dec.Positions, req); err != nil {
			return Policy{}, fmt.Errorf("mdp: policy %s: %w", pl.Name(), err)
		}
		clear(counts)
		for _, pos := range dec.Positions {
			counts[p.cls.of[req.Free[pos].Cost]]++
		}
		t := p.types.lookup(nil, counts)
		a := slices.Index(p.actType[lo:hi], t)
		if t < 0 || a < 0 {
			return Policy{}, fmt.Errorf("mdp: policy %s: placement %v is not an action of the state", pl.Name(), dec.Positions)
		}
		act[s] = lo + a
	}
	return Policy{Action: act}, nil
}

// checkPositions validates a decision against its request.
func checkPositions(pos []int, req *policy.PlacementRequest) error {
	if len(pos) != req.R {
		return fmt.Errorf("%w: %d positions for R = %d", ErrInvalidMDP, len(pos), req.R)
	}
	for i, x := range pos {
		if x < 0 || x >= len(req.Free) || (i > 0 && x <= pos[i-1]) {
			return fmt.Errorf("%w: positions %v are not ascending in [0, %d)", ErrInvalidMDP, pos, len(req.Free))
		}
	}
	return nil
}

// optimalPolicy is the one-step lookahead on the bias of a solved placement
// MDP (see SolvePlacement). It only reads its fields: safe for concurrent use.
type optimalPolicy struct {
	pm *placementMDP
	h  []float64
}

var _ policy.Placement = (*optimalPolicy)(nil)

func newOptimalPolicy(pm *placementMDP, h []float64) *optimalPolicy {
	return &optimalPolicy{pm: pm, h: h}
}

// Name returns "mdp-optimal".
func (o *optimalPolicy) Name() string { return OptimalPolicyName }

// Place chooses argmin_A [y·H(A) + h(M ⊎ A, w)] over the R-subsets A of the
// free slots (by cost class), or the R cheapest free slots when the state is
// outside the solved model.
func (o *optimalPolicy) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if req == nil {
		return policy.PlacementDecision{}, fmt.Errorf("%w: nil request", ErrInvalidMDP)
	}
	if req.R < 1 || req.R > len(req.Free) {
		return policy.PlacementDecision{}, fmt.Errorf("%w: R = %d with %d free slots", ErrInvalidMDP, req.R, len(req.Free))
	}
	pm, cls := o.pm, o.pm.cls
	y := req.X / float64(req.R)
	free := make([]int, cls.num())
	classOf := make([]int, len(req.Free))
	for i, sl := range req.Free {
		c, ok := cls.of[sl.Cost]
		switch {
		case !ok:
			return o.greedy(req, fmt.Sprintf("free slot %d has cost %g, not a cost of the model", sl.Index, sl.Cost)), nil
		case sl.Index < 0 || sl.Index >= len(pm.model.SlotCosts):
			return o.greedy(req, fmt.Sprintf("free slot %d is not a slot of the model (%d slots)", sl.Index, len(pm.model.SlotCosts))), nil
		}
		classOf[i] = c
		free[c]++
	}
	set := make([]int32, 0, len(req.Held))
	vec := make([]int, cls.num())
	var buf []byte
	for j, slotsHeld := range req.Held {
		clear(vec)
		for _, i := range slotsHeld {
			if i < 0 || i >= len(pm.model.SlotCosts) {
				return o.greedy(req, fmt.Sprintf("job %d in service holds slot %d, not a slot of the model", j, i)), nil
			}
			vec[cls.of[pm.model.SlotCosts[i]]]++
		}
		t := pm.types.lookup(&buf, vec)
		if t < 0 {
			return o.greedy(req, fmt.Sprintf("job %d in service holds a set the model never produces", j)), nil
		}
		set = append(set, t)
	}
	slices.Sort(set)
	if len(set) >= pm.model.K {
		return o.greedy(req, fmt.Sprintf("%d jobs already in service, K = %d", len(set), pm.model.K)), nil
	}
	w := int32(min(max(req.Waiting, 0), pm.model.MaxWaiting))
	best, bestH := math.Inf(1), 0.0
	var choice []int
	var key []byte
	eachSubset(free, req.R, func(a []int) bool {
		t := pm.types.lookup(&buf, a)
		if t < 0 {
			return true
		}
		key = stateKey(key, insertSorted(set, t), w)
		s, ok := pm.regular[string(key)]
		if !ok {
			return true
		}
		if v := y*pm.types.cost[t] + o.h[s]; choice == nil || v < best-1e-12*math.Abs(best) {
			best, bestH, choice = v, pm.types.cost[t], slices.Clone(a)
		}
		return true
	})
	if choice == nil {
		return o.greedy(req, fmt.Sprintf("R = %d or the jobs in service are outside the solved model", req.R)), nil
	}
	pos := make([]int, 0, req.R)
	for i, c := range classOf {
		if choice[c] > 0 {
			choice[c]--
			pos = append(pos, i)
		}
	}
	return policy.PlacementDecision{
		Positions: pos,
		Threshold: math.NaN(),
		Reason: fmt.Sprintf("mdp-optimal: y = %.6g, %d in service, %d waiting: argmin over %d-subsets of y·H(A) + h(next state) takes fetch cost %.6g",
			y, len(set), w, req.R, bestH),
	}, nil
}

// greedy is the fallback: the R cheapest free slots.
func (o *optimalPolicy) greedy(req *policy.PlacementRequest, why string) policy.PlacementDecision {
	pos := make([]int, req.R)
	for i := range pos {
		pos[i] = i
	}
	return policy.PlacementDecision{
		Positions: pos, Threshold: math.NaN(),
		Reason: "mdp-optimal: " + why + "; placed on the R cheapest free slots",
	}
}

// lookup returns the id of vector a, or -1 if it was never interned. It
// only reads the table (buf is the caller's scratch), so concurrent lookups
// are safe once the table is built.
func (tt *typeTable) lookup(buf *[]byte, a []int) int32 {
	var local []byte
	if buf == nil {
		buf = &local
	}
	k := (*buf)[:0]
	for _, x := range a {
		k = binary.LittleEndian.AppendUint16(k, uint16(x))
	}
	*buf = k
	if t, ok := tt.index[string(k)]; ok {
		return t
	}
	return -1
}

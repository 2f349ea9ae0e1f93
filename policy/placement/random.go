package placement

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/optd/optd/policy"
)

var (
	_ policy.Placement = (*Random)(nil)
	_ policy.Stateful  = (*Random)(nil)
)

// Random places a job on an R-subset of the free slots drawn uniformly
// among all R-subsets, oblivious to cost: Hadoop's default behaviour, the
// baseline of Tan et al., §V-B. The subset is drawn by Floyd's algorithm (R
// draws, no shuffle of the free list). Its generator's state is its
// snapshot (policy.Stateful), so that a server restarted between two
// placements draws what one that never stopped would. Not safe for
// concurrent use.
type Random struct {
	src    *rand.PCG
	rng    *rand.Rand
	chosen map[int]struct{}
}

// linearScanMax: up to this R, membership is checked by scanning the
// positions drawn so far rather than with a set.
const linearScanMax = 32

// NewRandom returns the random policy seeded with cfg.Seed (a PCG
// generator), so that a run is reproducible.
func NewRandom(cfg policy.PlacementConfig) (policy.Placement, error) {
	src := rand.NewPCG(cfg.Seed, 0x5eed)
	return &Random{src: src, rng: rand.New(src), chosen: map[int]struct{}{}}, nil
}

// randomState is the random policy's snapshot: its PCG generator's state.
type randomState struct {
	PCG []byte `json:"pcg"`
}

// Snapshot implements policy.Stateful.
func (p *Random) Snapshot() ([]byte, error) {
	b, err := p.src.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return json.Marshal(randomState{PCG: b})
}

// Restore implements policy.Stateful.
func (p *Random) Restore(data []byte) error {
	var st randomState
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	if err := p.src.UnmarshalBinary(st.PCG); err != nil {
		return fmt.Errorf("%w: random: pcg: %w", policy.ErrInvalidConfig, err)
	}
	return nil
}

// Name implements policy.Plugin.
func (*Random) Name() string { return NameRandom }

// Place draws the positions uniformly: for j = n−R .. n−1 pick t uniform on
// 0..j and take t, or j if t was already taken (Floyd), which makes every
// R-subset equally likely.
func (p *Random) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	n, r := len(req.Free), req.R
	clear(p.chosen)
	pos := make([]int, 0, r)
	taken := func(t int) bool {
		if r <= linearScanMax {
			return slices.Contains(pos, t)
		}
		_, ok := p.chosen[t]
		return ok
	}
	for j := n - r; j < n; j++ {
		t := p.rng.IntN(j + 1)
		if taken(t) {
			t = j
		}
		if r > linearScanMax {
			p.chosen[t] = struct{}{}
		}
		pos = append(pos, t)
	}
	slices.Sort(pos)
	return policy.PlacementDecision{
		Positions: pos,
		Threshold: math.NaN(),
		Reason:    fmt.Sprintf("random: %d of %d free slots uniformly", r, n),
	}, nil
}

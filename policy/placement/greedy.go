package placement

import (
	"fmt"
	"math"

	"github.com/optd/optd/policy"
)

var _ policy.Placement = (*Greedy)(nil)

// Greedy places every job on the R cheapest free slots (Tan et al., §V-B:
// "always assigns ReduceTasks to the available slots with the least cost").
// It is stateless and safe for concurrent use.
type Greedy struct{}

// Name implements policy.Plugin.
func (Greedy) Name() string { return NameGreedy }

// Place takes positions 0..R−1 of the cheapest-first free list.
func (Greedy) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	return policy.PlacementDecision{
		Positions: Block(0, req.R),
		Threshold: math.NaN(),
		Reason:    fmt.Sprintf("greedy: the %d cheapest of %d free slots", req.R, len(req.Free)),
	}, nil
}

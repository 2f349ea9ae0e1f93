package policy

import (
	"fmt"
	"math"
)

var _ Placement = (*Greedy)(nil)

// Greedy places every job on the R cheapest free slots (Tan et al., §V-B:
// "always assigns ReduceTasks to the available slots with the least cost").
// It is stateless and safe for concurrent use.
type Greedy struct{}

// Name implements Plugin.
func (Greedy) Name() string { return NameGreedy }

// Place takes positions 0..R−1 of the cheapest-first free list.
func (Greedy) Place(req *PlacementRequest) (PlacementDecision, error) {
	if err := checkRequest(req); err != nil {
		return PlacementDecision{}, err
	}
	return PlacementDecision{
		Positions: block(0, req.R),
		Threshold: math.NaN(),
		Reason:    fmt.Sprintf("greedy: the %d cheapest of %d free slots", req.R, len(req.Free)),
	}, nil
}

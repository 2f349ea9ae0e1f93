package placement

import (
	"fmt"
	"math"

	"github.com/optd/optd/policy"
)

var _ policy.Placement = (*Costliest)(nil)

// Costliest places every job on the R most expensive free slots: an
// adversary to measure the other policies' gains against (Tan et al.'s
// Fig. 3 compares a bad placement with a good one). Stateless and safe
// for concurrent use.
type Costliest struct{}

// Name implements policy.Plugin.
func (Costliest) Name() string { return NameCostliest }

// Place takes the last R positions of the cheapest-first free list.
func (Costliest) Place(req *policy.PlacementRequest) (policy.PlacementDecision, error) {
	if err := req.Check(); err != nil {
		return policy.PlacementDecision{}, err
	}
	return policy.PlacementDecision{
		Positions: Block(len(req.Free)-req.R, req.R),
		Threshold: math.NaN(),
		Reason:    fmt.Sprintf("costliest: the %d most expensive of %d free slots", req.R, len(req.Free)),
	}, nil
}

package bound

import (
	"fmt"
	"reflect"
	"slices"
)

// Merge combines the shards of one run into the unsharded output.
func Merge(shards []*Shard) (*Output, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shards")
	}
	first := shards[0]
	n := first.Count
	if len(shards) != n {
		return nil, fmt.Errorf("merge: got %d shards of a run split in %d", len(shards), n)
	}
	seen := make([]bool, n)
	var reps []RepFigures
	for _, sh := range shards {
		if sh.Count != n || sh.Index < 0 || sh.Index >= n {
			return nil, fmt.Errorf("merge: shard %d/%d does not belong to a run split in %d", sh.Index, sh.Count, n)
		}
		if seen[sh.Index] {
			return nil, fmt.Errorf("merge: shard %d/%d given twice", sh.Index, n)
		}
		seen[sh.Index] = true
		if !reflect.DeepEqual(sh.Settings, first.Settings) {
			return nil, fmt.Errorf("merge: shard %d/%d has settings %+v, shard %d/%d has %+v", sh.Index, n, sh.Settings, first.Index, n, first.Settings)
		}
		if !reflect.DeepEqual(sh.Fixed, first.Fixed) {
			return nil, fmt.Errorf("merge: shard %d/%d and shard %d/%d disagree on the MDP or exact bounds", sh.Index, n, first.Index, n)
		}
		lo, hi := shardRange(first.Settings.Replications, sh.Index, n)
		if len(sh.Reps) != hi-lo {
			return nil, fmt.Errorf("merge: shard %d/%d has %d replications, want %d", sh.Index, n, len(sh.Reps), hi-lo)
		}
		for k, r := range sh.Reps {
			if r.Replication != lo+k {
				return nil, fmt.Errorf("merge: shard %d/%d lists replication %d at position %d, want %d", sh.Index, n, r.Replication, k, lo+k)
			}
		}
		reps = append(reps, sh.Reps...)
	}
	slices.SortFunc(reps, func(a, b RepFigures) int { return a.Replication - b.Replication })
	return aggregate(first.Settings.Policies, first.Fixed, reps)
}

package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/optd/optd/models"
)

// bestPendingByScan is the definition BestPending implements, by a full
// scan: the untaken pending task of best locality rank, lowest position
// first.
func bestPendingByScan(h *Heartbeat, j *JobView, t models.TaskType) (PendingTask, Locality, bool) {
	best, bestLoc, found := PendingTask{}, Locality(0), false
	for _, p := range j.PendingOf(t) {
		if h.Taken(j.ID, t, p.Index) {
			continue
		}
		if loc := LocalityOf(p, h.Node); !found || loc.Rank() < bestLoc.Rank() {
			best, bestLoc, found = p, loc, true
		}
	}
	return best, bestLoc, found
}

// TestBestPendingResumesCorrectly: over random jobs (input on none, one or
// three of six nodes in three racks) and random orders of starts, the
// resuming BestPending answers exactly what a full scan answers after
// every start, including starts of tasks it did not propose.
func TestBestPendingResumesCorrectly(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 19))
		n := &NodeView{ID: fmt.Sprint("n", rng.IntN(6)), Rack: ""}
		n.Rack = fmt.Sprint("r", n.ID[1]%3)
		j := &JobView{ID: "j"}
		for k := range rng.IntN(60) {
			p := PendingTask{Index: 2 * k}
			for range []int{0, 1, 3}[rng.IntN(3)] {
				id := rng.IntN(6)
				p.PreferredNodes = append(p.PreferredNodes, fmt.Sprint("n", id))
				p.PreferredRacks = append(p.PreferredRacks, fmt.Sprint("r", byte('0'+id)%3))
			}
			j.PendingMaps = append(j.PendingMaps, p)
		}
		h := NewHeartbeat(&ClusterView{Jobs: []*JobView{j}}, n)
		for step := 0; ; step++ {
			got, gotLoc, ok := h.BestPending(j, models.MapTask)
			want, wantLoc, wantOK := bestPendingByScan(h, j, models.MapTask)
			if ok != wantOK || got.Index != want.Index || gotLoc != wantLoc {
				t.Fatalf("seed %d step %d: BestPending = %d %v %v, full scan %d %v %v", seed, step, got.Index, gotLoc, ok, want.Index, wantLoc, wantOK)
			}
			if !ok {
				break
			}
			take := got
			if rng.IntN(3) == 0 { // a start another stage chose
				free := []PendingTask{}
				for _, p := range j.PendingMaps {
					if !h.Taken(j.ID, models.MapTask, p.Index) {
						free = append(free, p)
					}
				}
				take = free[rng.IntN(len(free))]
			}
			h.commit(Action{Kind: ActionStart, Job: j.ID, Type: models.MapTask, Task: take.Index})
			if h.HasPending(j, models.MapTask) != (step+1 < len(j.PendingMaps)) {
				t.Fatalf("seed %d step %d: HasPending wrong", seed, step)
			}
		}
	}
}

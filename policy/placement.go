package policy

// Slot is a free reduce slot offered to a placement decision.
type Slot struct {
	// Index identifies the slot in its cluster (stable across decisions).
	Index int
	// Cost is the slot's fetching cost per unit of data, H(v) in Tan et al.
	// (INFOCOM 2013, §II-B).
	Cost float64
}

// PlacementRequest is what a reduce-placement policy sees when a job enters
// service and must be placed at once on R free reduce slots.
type PlacementRequest struct {
	// Free lists the free slots cheapest first (ties by Index).
	Free []Slot
	// X is the job's total intermediate data, R its number of ReduceTasks;
	// each reducer fetches Y = X/R.
	X float64
	R int
	// JobsInSystem is N_i of Theorem 4: the number of jobs in the system (in
	// service and waiting) that the job saw when it arrived, itself excluded.
	JobsInSystem int
	// Waiting is the number of jobs waiting to enter service now.
	Waiting int
	// Held lists, for each job in service, the slot indices it holds (a
	// state-based policy such as the MDP table reads it; others ignore it).
	Held [][]int
}

// PlacementDecision is a policy's answer: which free slots, and why.
type PlacementDecision struct {
	// Positions are 0-based positions in PlacementRequest.Free, ascending,
	// exactly R of them.
	Positions []int
	// Threshold is the threshold the decision compared Y with, NaN if none.
	Threshold float64
	// Reason explains the decision in one line (the threshold used, the
	// estimate behind it, the rule applied).
	Reason string
}

// Placement decides where a job's reducers go. Implementations may keep state
// (estimators); one instance serves one cluster or one simulation replication
// and is not safe for concurrent use unless it says so.
type Placement interface {
	Plugin
	Place(req *PlacementRequest) (PlacementDecision, error)
}

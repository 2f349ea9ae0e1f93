package robustness

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// outcome is what a call's answer says of its change.
type outcome int

const (
	acked     outcome = iota // done and durable
	refused                  // definitely not done
	uncertain                // the answer was lost (the server died): either way
)

// found reads a call's answer as a yes (OK) or no (NotFound).
func found(err error) (bool, error) {
	switch status.Code(err) {
	case codes.OK:
		return true, nil
	case codes.NotFound:
		return false, nil
	}
	return false, err
}

// clusterState reads cluster id, or describes why it could not.
func clusterState(ctx context.Context, cl optdv1.ClusterServiceClient, id string) (*optdv1.ClusterState, []string) {
	gs, err := cl.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: id})
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: GetClusterState: %v", id, err)}
	}
	return gs.GetState(), nil
}

func classify(err error) outcome {
	if err == nil {
		return acked
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.FailedPrecondition, codes.ResourceExhausted:
		return refused
	}
	return uncertain
}

// client changes clusters of its own and keeps a model of what the server
// acknowledged.
type client interface {
	// setup registers the client's clusters.
	setup(ctx context.Context, cl optdv1.ClusterServiceClient) error
	// run makes changes until one gets no definite answer (the server
	// died, or ctx ended) and returns the number acknowledged. Refusals
	// that its model does not explain are returned as problems.
	run(ctx context.Context, cl optdv1.ClusterServiceClient, rng *rand.Rand) (int, []string)
	// verify compares the restarted server with the model, deciding the
	// change that was in flight from what the server holds; it returns
	// every difference (lost or invented).
	verify(ctx context.Context, cl optdv1.ClusterServiceClient) []string
	// resync repairs what verify cannot model (it may write).
	resync(ctx context.Context, cl optdv1.ClusterServiceClient) error
	// clusters are the ids of the client's clusters.
	clusters() []string
}

// ---- placement: SubmitJob, PlaceReduces, JobFinished on a cluster ----

type pJob struct {
	reduces int32
	placed  bool
	slots   []int32
}

type pOp struct {
	kind string // submit, place, finish
	job  string
}

type placementClient struct {
	id       string
	policy   string
	jobs     map[string]*pJob
	next     int
	finished int64
	seen     int64 // placements, each one an estimator observation
	inFlight *pOp
}

func newPlacementClient(id, policy string) *placementClient {
	return &placementClient{id: id, policy: policy, jobs: map[string]*pJob{}}
}

func (c *placementClient) clusters() []string { return []string{c.id} }

func (c *placementClient) setup(ctx context.Context, cl optdv1.ClusterServiceClient) error {
	req := &optdv1.RegisterClusterRequest{ClusterId: c.id, Policy: &optdv1.PlacementPolicy{Name: c.policy, Window: 10}}
	for i := range 8 {
		n := "n" + strconv.Itoa(i)
		req.Nodes = append(req.Nodes, &optdv1.Node{Id: n, Rack: "r" + strconv.Itoa(i%2)})
		req.Slots = append(req.Slots, &optdv1.ReduceSlot{NodeId: n, FetchCost: float64(i%4 + 1)})
	}
	_, err := cl.RegisterCluster(ctx, req)
	return err
}

func (c *placementClient) run(ctx context.Context, cl optdv1.ClusterServiceClient, rng *rand.Rand) (int, []string) {
	n := 0
	for ctx.Err() == nil {
		var op pOp
		var unplaced []string
		for _, id := range slices.Sorted(maps.Keys(c.jobs)) {
			if !c.jobs[id].placed {
				unplaced = append(unplaced, id)
			}
		}
		switch {
		case len(c.jobs) < 5 || rng.IntN(4) == 0 && len(c.jobs) < 8:
			c.next++
			op = pOp{"submit", fmt.Sprint("j", c.next)}
		case len(unplaced) > 0 && rng.IntN(3) > 0:
			op = pOp{"place", unplaced[rng.IntN(len(unplaced))]}
		default:
			ids := slices.Sorted(maps.Keys(c.jobs))
			op = pOp{"finish", ids[rng.IntN(len(ids))]}
		}
		r := int32(1 + rng.IntN(3))
		var err error
		var placed *optdv1.PlaceReducesResponse
		switch op.kind {
		case "submit":
			_, err = cl.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: c.id, JobId: op.job, Maps: 3, Reduces: r})
		case "place":
			placed, err = cl.PlaceReduces(ctx, &optdv1.PlaceReducesRequest{ClusterId: c.id, JobId: op.job, DataMb: float64(rng.IntN(500))})
		case "finish":
			_, err = cl.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: c.id, JobId: op.job})
		}
		switch classify(err) {
		case acked:
			n++
			switch op.kind {
			case "submit":
				c.jobs[op.job] = &pJob{reduces: r}
			case "place":
				j := c.jobs[op.job]
				j.placed = true
				for _, s := range placed.GetSlots() {
					j.slots = append(j.slots, s.GetSlot())
				}
				c.seen++
			case "finish":
				delete(c.jobs, op.job)
				c.finished++
			}
		case refused:
			// Only a placement may be refused (no free slots now).
			if op.kind != "place" || status.Code(err) != codes.FailedPrecondition {
				return n, []string{fmt.Sprintf("%s: %s %s refused: %v", c.id, op.kind, op.job, err)}
			}
		case uncertain:
			c.inFlight = &op
			return n, nil
		}
	}
	return n, nil
}

func (c *placementClient) verify(ctx context.Context, cl optdv1.ClusterServiceClient) []string {
	st, problems := clusterState(ctx, cl, c.id)
	if st == nil {
		return problems
	}
	got := map[string]*optdv1.JobState{}
	for _, j := range st.GetJobs() {
		got[j.GetJobId()] = j
	}
	if op := c.inFlight; op != nil {
		c.inFlight = nil
		switch j := got[op.job]; op.kind {
		case "submit":
			if j != nil {
				c.jobs[op.job] = &pJob{reduces: j.GetReduces()}
			}
		case "place":
			if j != nil && j.GetPlaced() && !c.jobs[op.job].placed {
				c.jobs[op.job].placed, c.jobs[op.job].slots = true, j.GetSlots()
				c.seen++
			}
		case "finish":
			if j == nil {
				delete(c.jobs, op.job)
				c.finished++
			}
		}
	}
	for id, want := range c.jobs {
		j := got[id]
		switch {
		case j == nil:
			problems = append(problems, fmt.Sprintf("lost: %s: job %s (acknowledged) is missing", c.id, id))
		case j.GetReduces() != want.reduces || j.GetPlaced() != want.placed || !slices.Equal(j.GetSlots(), want.slots):
			problems = append(problems, fmt.Sprintf("lost: %s: job %s is %v, acknowledged reduces %d placed %v slots %v",
				c.id, id, j, want.reduces, want.placed, want.slots))
		}
	}
	for id := range got {
		if c.jobs[id] == nil {
			problems = append(problems, fmt.Sprintf("invented: %s: job %s was never acknowledged (or its finish was)", c.id, id))
		}
	}
	if st.GetFinishedJobs() != c.finished {
		problems = append(problems, fmt.Sprintf("%s: %d finished jobs, acknowledged %d", c.id, st.GetFinishedJobs(), c.finished))
	}
	if c.policy == "receding-horizon" && st.GetEstimator().GetSeen() != c.seen {
		problems = append(problems, fmt.Sprintf("%s: the estimator saw %d placements, acknowledged %d", c.id, st.GetEstimator().GetSeen(), c.seen))
	}
	return problems
}

func (c *placementClient) resync(context.Context, optdv1.ClusterServiceClient) error { return nil }

// ---- heartbeat: SubmitJob, Heartbeat, JobFinished on a FIFO cluster ----

type attemptRef struct {
	node  string
	phase string // the attempt's first phase: "map" or "shuffle"
}

type hbOp struct {
	kind     string // submit, heartbeat, finish
	job      string
	node     string
	finished []int64
}

type heartbeatClient struct {
	id      string
	running map[int64]attemptRef // acknowledged started, not acknowledged finished
	done    map[int64]attemptRef // acknowledged finished (the last ones)
	jobs    map[string]bool      // submitted, not acknowledged JobFinished
	toClose []string             // reported finished, JobFinished to call
	next    int
	now     float64
	// inFlight is the change whose answer was lost; lostBeat is set when
	// it was a heartbeat, whose starts are unknown: resync then removes
	// every job.
	inFlight *hbOp
	lostBeat bool
}

var hbNodes = []string{"a", "b", "c"}

func newHeartbeatClient(id string) *heartbeatClient {
	return &heartbeatClient{id: id, running: map[int64]attemptRef{}, done: map[int64]attemptRef{}, jobs: map[string]bool{}}
}

func (c *heartbeatClient) clusters() []string { return []string{c.id} }

func (c *heartbeatClient) setup(ctx context.Context, cl optdv1.ClusterServiceClient) error {
	capacity := map[string]float64{"memory_mb": 4096, "vcores": 2}
	req := &optdv1.RegisterClusterRequest{ClusterId: c.id,
		Heartbeat: &optdv1.HeartbeatPolicy{Spec: "fifo", Resources: []string{"memory_mb", "vcores"}}}
	for i, n := range hbNodes {
		req.Nodes = append(req.Nodes, &optdv1.Node{Id: n, Rack: "r" + strconv.Itoa(i%2), Capacity: capacity})
	}
	_, err := cl.RegisterCluster(ctx, req)
	return err
}

func (c *heartbeatClient) run(ctx context.Context, cl optdv1.ClusterServiceClient, rng *rand.Rand) (int, []string) {
	n := 0
	for ctx.Err() == nil {
		c.now++
		var op hbOp
		var err error
		var beat *optdv1.HeartbeatResponse
		switch {
		case len(c.toClose) > 0:
			op = hbOp{kind: "finish", job: c.toClose[0]}
			_, err = cl.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: c.id, JobId: op.job})
		case len(c.jobs) < 3:
			c.next++
			op = hbOp{kind: "submit", job: fmt.Sprint("j", c.next)}
			d := map[string]float64{"memory_mb": 1024, "vcores": 1}
			var in []*optdv1.MapInput
			for range 2 {
				in = append(in, &optdv1.MapInput{Nodes: []string{hbNodes[rng.IntN(3)]}})
			}
			_, err = cl.SubmitJob(ctx, &optdv1.SubmitJobRequest{ClusterId: c.id, JobId: op.job, SubmitS: &c.now, Maps: 2, Reduces: 1,
				MapDemand: d, ReduceDemand: d, Stages: []*optdv1.JobStage{{Maps: in, Reduces: 1}}})
		default:
			op = hbOp{kind: "heartbeat", node: hbNodes[rng.IntN(3)]}
			for _, id := range slices.Sorted(maps.Keys(c.running)) {
				if c.running[id].node == op.node && rng.IntN(4) > 0 {
					op.finished = append(op.finished, id)
				}
			}
			beat, err = cl.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: c.id, NodeId: op.node, NowS: &c.now, Finished: op.finished})
		}
		switch classify(err) {
		case acked:
			n++
			switch op.kind {
			case "finish":
				delete(c.jobs, op.job)
				c.toClose = c.toClose[1:]
			case "submit":
				c.jobs[op.job] = true
			case "heartbeat":
				for _, id := range op.finished {
					c.done[id] = c.running[id]
					delete(c.running, id)
				}
				for _, a := range beat.GetActions() {
					if a.GetKind() == "start" {
						phase := "map"
						if a.GetTaskType() == "reduce" {
							phase = "shuffle"
						}
						c.running[a.GetAttemptId()] = attemptRef{node: op.node, phase: phase}
					}
				}
				c.toClose = append(c.toClose, beat.GetFinishedJobs()...)
				for len(c.done) > 50 {
					delete(c.done, slices.Min(slices.Collect(maps.Keys(c.done))))
				}
			}
		case refused:
			return n, []string{fmt.Sprintf("%s: %s %s%s refused: %v", c.id, op.kind, op.job, op.node, err)}
		case uncertain:
			c.inFlight = &op
			c.lostBeat = op.kind == "heartbeat"
			return n, nil
		}
	}
	return n, nil
}

// probe reports whether attempt id runs on its node, asking with a
// report-only heartbeat (which changes nothing durable).
func (c *heartbeatClient) probe(ctx context.Context, cl optdv1.ClusterServiceClient, id int64, a attemptRef) (bool, error) {
	_, err := cl.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: c.id, NodeId: a.node, NowS: &c.now, ReportOnly: true,
		Running: []*optdv1.AttemptStatus{{AttemptId: id, Phase: a.phase}}})
	return found(err)
}

func (c *heartbeatClient) verify(ctx context.Context, cl optdv1.ClusterServiceClient) []string {
	st, problems := clusterState(ctx, cl, c.id)
	if st == nil {
		return problems
	}
	stored := map[string]bool{}
	for _, j := range st.GetJobs() {
		stored[j.GetJobId()] = true
	}
	uncertainIDs := map[int64]bool{}
	if op := c.inFlight; op != nil {
		c.inFlight = nil
		switch op.kind {
		case "submit":
			if stored[op.job] {
				c.jobs[op.job] = true
			}
		case "finish":
			if !stored[op.job] {
				delete(c.jobs, op.job)
				c.toClose = c.toClose[1:]
			}
		case "heartbeat":
			for _, id := range op.finished {
				uncertainIDs[id] = true
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.running)) {
		on, err := c.probe(ctx, cl, id, c.running[id])
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: probing attempt %d: %v", c.id, id, err))
		case !on && !uncertainIDs[id]:
			problems = append(problems, fmt.Sprintf("lost: %s: attempt %d (acknowledged started) is not running", c.id, id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.done)) {
		if on, err := c.probe(ctx, cl, id, c.done[id]); err == nil && on {
			problems = append(problems, fmt.Sprintf("invented: %s: attempt %d (acknowledged finished) is running", c.id, id))
		}
	}
	if got := int(st.GetRunningAttempts()); got != len(c.running) && !c.lostBeat {
		problems = append(problems, fmt.Sprintf("%s: %d running attempts, acknowledged %d", c.id, got, len(c.running)))
	}
	for id := range c.jobs {
		if !stored[id] {
			problems = append(problems, fmt.Sprintf("lost: %s: job %s (acknowledged submitted) is missing", c.id, id))
		}
	}
	for id := range stored {
		if !c.jobs[id] {
			problems = append(problems, fmt.Sprintf("invented: %s: job %s was never acknowledged (or its finish was)", c.id, id))
		}
	}
	return problems
}

// resync removes every job after a heartbeat whose answer was lost (its
// starts are unknown), so that the model is exact again.
func (c *heartbeatClient) resync(ctx context.Context, cl optdv1.ClusterServiceClient) error {
	if !c.lostBeat {
		return nil
	}
	for _, id := range slices.Sorted(maps.Keys(c.jobs)) {
		if _, err := cl.JobFinished(ctx, &optdv1.JobFinishedRequest{ClusterId: c.id, JobId: id}); err != nil {
			return fmt.Errorf("%s: removing job %s: %w", c.id, id, err)
		}
	}
	c.jobs, c.running, c.toClose, c.lostBeat = map[string]bool{}, map[int64]attemptRef{}, nil, false
	return nil
}

// ---- registrations: RegisterCluster of new clusters ----

type registrationClient struct {
	prefix   string
	acked    []string
	next     int
	inFlight string
}

func (c *registrationClient) name(k int) string { return fmt.Sprintf("%s-%d", c.prefix, k) }

func (c *registrationClient) clusters() []string {
	ids := slices.Clone(c.acked)
	return append(ids, c.name(c.next+1))
}

func (c *registrationClient) setup(context.Context, optdv1.ClusterServiceClient) error { return nil }

func (c *registrationClient) run(ctx context.Context, cl optdv1.ClusterServiceClient, rng *rand.Rand) (int, []string) {
	n := 0
	for ctx.Err() == nil {
		c.next++
		id := c.name(c.next)
		req := &optdv1.RegisterClusterRequest{ClusterId: id, Policy: &optdv1.PlacementPolicy{Name: "greedy"}}
		for i := range 1 + rng.IntN(20) {
			node := "n" + strconv.Itoa(i)
			req.Nodes = append(req.Nodes, &optdv1.Node{Id: node, Rack: "r"})
			req.Slots = append(req.Slots, &optdv1.ReduceSlot{NodeId: node, FetchCost: float64(1 + i%3)})
		}
		_, err := cl.RegisterCluster(ctx, req)
		switch classify(err) {
		case acked:
			n++
			c.acked = append(c.acked, id)
		case refused:
			return n, []string{fmt.Sprintf("register %s refused: %v", id, err)}
		case uncertain:
			c.inFlight = id
			return n, nil
		}
	}
	return n, nil
}

func (c *registrationClient) verify(ctx context.Context, cl optdv1.ClusterServiceClient) []string {
	exists := func(id string) (bool, error) {
		_, err := cl.GetClusterState(ctx, &optdv1.GetClusterStateRequest{ClusterId: id})
		return found(err)
	}
	var problems []string
	if id := c.inFlight; id != "" {
		c.inFlight = ""
		if ok, err := exists(id); err != nil {
			problems = append(problems, err.Error())
		} else if ok {
			c.acked = append(c.acked, id)
		}
	}
	// Every acknowledged registration is there (the newest ones checked:
	// they are the ones a crash could lose), and none after the last.
	for _, id := range c.acked[max(0, len(c.acked)-20):] {
		if ok, err := exists(id); err != nil || !ok {
			problems = append(problems, fmt.Sprintf("lost: cluster %s (acknowledged registered) is missing (%v)", id, err))
		}
	}
	if ok, err := exists(c.name(c.next + 1)); err != nil || ok {
		problems = append(problems, fmt.Sprintf("invented: cluster %s was never registered (%v)", c.name(c.next+1), err))
	}
	return problems
}

func (c *registrationClient) resync(context.Context, optdv1.ClusterServiceClient) error { return nil }

package server

import (
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// TestEnumTwinsCoverTheStrings: every string the server can answer in a
// closed set (from the Go types' own String methods) has an enum twin that
// maps back to it, and every enum constant maps to a string that maps back
// to it: the two ways agree on the whole sets.
func TestEnumTwinsCoverTheStrings(t *testing.T) {
	sets := []struct {
		prefix string
		strs   []string
		values map[string]int32
		names  map[int32]string
	}{
		{"ACTION_KIND_", nil, optdv1.ActionKind_value, optdv1.ActionKind_name},
		{"TASK_TYPE_", []string{models.MapTask.String(), models.ReduceTask.String()}, optdv1.TaskType_value, optdv1.TaskType_name},
		{"LOCALITY_", []string{policy.NodeLocal.String(), policy.RackLocal.String(), policy.OffRack.String()}, optdv1.Locality_value, optdv1.Locality_name},
		{"PHASE_", []string{models.PhaseMap.String(), models.PhaseShuffle.String(), models.PhaseSort.String(), models.PhaseReduce.String()}, optdv1.Phase_value, optdv1.Phase_name},
	}
	for k := policy.ActionStart; k <= policy.ActionSlots; k++ {
		sets[0].strs = append(sets[0].strs, k.String())
	}
	for _, set := range sets {
		seen := map[int32]bool{}
		for _, s := range set.strs {
			n := enumOf(set.prefix, s, set.values)
			if n == 0 || stringOf(set.prefix, n, set.names) != s {
				t.Errorf("%s: %q maps to %d and back to %q", set.prefix, s, n, stringOf(set.prefix, n, set.names))
			}
			seen[n] = true
		}
		if len(seen) != len(set.names)-1 {
			t.Errorf("%s: the server's %d strings cover %d of the %d enum constants", set.prefix, len(set.strs), len(seen), len(set.names)-1)
		}
	}
}

// TestHeartbeatEnums: a heartbeat's actions carry enum twins equal to
// their strings, and a report may give its phase as the enum; a phase and
// an enum that disagree are refused.
func TestHeartbeatEnums(t *testing.T) {
	ts := startServer(t, "", Options{}, nil)
	ctx := ctxT(t)
	r := firstHeartbeat(t, ts, "fifo")
	for _, a := range r.GetActions() {
		if a.GetActionKind() != optdv1.ActionKind_ACTION_KIND_START || a.GetTaskTypeEnum().String() != "TASK_TYPE_"+map[string]string{"map": "MAP", "reduce": "REDUCE"}[a.GetTaskType()] ||
			stringOf("LOCALITY_", int32(a.GetLocalityType()), optdv1.Locality_name) != a.GetLocality() {
			t.Errorf("action %v: enum twins disagree with the strings", a)
		}
	}
	var id int64
	for _, a := range r.GetActions() {
		if a.GetTaskTypeEnum() == optdv1.TaskType_TASK_TYPE_MAP {
			id = a.GetAttemptId()
		}
	}
	if id == 0 {
		t.Fatalf("no map started: %v", r)
	}
	if _, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(2),
		Running: []*optdv1.AttemptStatus{{AttemptId: id, PhaseType: optdv1.Phase_PHASE_MAP, Progress: 0.5}}}); err != nil {
		t.Errorf("phase given as the enum: %v", err)
	}
	_, err := ts.cluster.Heartbeat(ctx, &optdv1.HeartbeatRequest{ClusterId: "h", NodeId: "a", NowS: at(3),
		Running: []*optdv1.AttemptStatus{{AttemptId: id, Phase: "map", PhaseType: optdv1.Phase_PHASE_SORT, Progress: 0.6}}})
	wantCode(t, err, codes.InvalidArgument, "running[0].phase_type")
}

package server

import (
	"strings"

	optdv1 "github.com/optd/optd/proto/optd/v1"
)

// The enum twins of the API's closed string sets (see optd.proto): a value
// "node_local" is the enum constant PREFIX_NODE_LOCAL, so one rule maps
// every set both ways and a new value needs no code here.

// enumOf is the enum number of string value v in the enum whose constants
// are prefix+upper(v) in values (0, unspecified, for "" or an unknown v).
func enumOf(prefix, v string, values map[string]int32) int32 {
	if v == "" {
		return 0
	}
	return values[prefix+strings.ToUpper(v)]
}

// stringOf is the string value of enum number n (the inverse of enumOf).
func stringOf(prefix string, n int32, names map[int32]string) string {
	if n == 0 {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(names[n], prefix))
}

// withEnums fills an answer's action enum twins from its strings.
func withEnums(a *optdv1.Action) *optdv1.Action {
	a.ActionKind = optdv1.ActionKind(enumOf("ACTION_KIND_", a.GetKind(), optdv1.ActionKind_value))
	a.TaskTypeEnum = optdv1.TaskType(enumOf("TASK_TYPE_", a.GetTaskType(), optdv1.TaskType_value))
	a.SlotType = optdv1.TaskType(enumOf("TASK_TYPE_", a.GetSlot(), optdv1.TaskType_value))
	a.LocalityType = optdv1.Locality(enumOf("LOCALITY_", a.GetLocality(), optdv1.Locality_value))
	return a
}

// vetoWithEnums fills a veto's enum twins from its strings.
func vetoWithEnums(v *optdv1.Veto) *optdv1.Veto {
	v.ActionKind = optdv1.ActionKind(enumOf("ACTION_KIND_", v.GetKind(), optdv1.ActionKind_value))
	v.TaskTypeEnum = optdv1.TaskType(enumOf("TASK_TYPE_", v.GetTaskType(), optdv1.TaskType_value))
	return v
}

// phaseOf is an attempt status's phase from its string or its enum twin;
// ok is false when both are given and disagree, or the enum is unknown.
func phaseOf(s *optdv1.AttemptStatus) (string, bool) {
	e := stringOf("PHASE_", int32(s.GetPhaseType()), optdv1.Phase_name)
	switch {
	case s.GetPhaseType() != 0 && e == "":
		return "", false
	case e == "":
		return s.GetPhase(), true
	case s.GetPhase() == "" || s.GetPhase() == e:
		return e, true
	}
	return "", false
}

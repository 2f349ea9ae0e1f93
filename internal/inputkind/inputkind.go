// Package inputkind tells which of optd's formats a JSON document is, by its
// top-level fields, so that a file given to the wrong verb (a placement
// scenario to `optd simulate`, an output of `optd bound` to `optd bound
// --scenario`) is refused with the verb it belongs to rather than with the
// first field the verb does not know.
package inputkind

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Kind is one format: its name (as in docs/formats.md and `optd schema`),
// what reads it or writes it, and the top-level fields that identify it:
// a document is of the kind if it has every field of one of the sets.
type Kind struct {
	Name string
	For  string
	sets [][]string
}

// Kinds are the formats, inputs then outputs. The identifying fields are
// required in (or always written to) their format and absent from the
// others.
var Kinds = []Kind{
	{"cluster-scenario", "an input of optd simulate, optd search or optd replay", [][]string{{"cluster"}}},
	{"placement-scenario", "an input of optd bound or optd search", [][]string{{"slots"}, {"max_jobs_in_service"}, {"service_rate"}}},
	{"ita-instance", "an input of optd ita --instance", [][]string{{"nodes", "tasks"}}},
	{"workload", "an input of optd thresholds --workload", [][]string{{"data", "reduces"}, {"joint"}}},
	{"thresholds output", "what optd thresholds prints", [][]string{{"cost_coefficients"}}},
	{"ita output", "what optd ita prints", [][]string{{"assignment", "objective"}}},
	{"bound output", "what optd bound prints", [][]string{{"lower_bounds"}}},
	{"simulate output", "what optd simulate prints", [][]string{{"makespan_s"}}},
	{"search output", "what optd search prints", [][]string{{"best_policy"}}},
}

// Detect returns the one kind the document's top-level fields identify, or
// nil when it is not a JSON object, matches no kind or more than one.
func Detect(data []byte) *Kind {
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return nil
	}
	var found *Kind
	for i := range Kinds {
		k := &Kinds[i]
		if slices.ContainsFunc(k.sets, func(set []string) bool {
			return !slices.ContainsFunc(set, func(f string) bool { _, ok := top[f]; return !ok })
		}) {
			if found != nil {
				return nil
			}
			found = k
		}
	}
	return found
}

// Check returns an error when the document is recognizably of another kind
// than want (one of the Kinds' names), naming what it is and which verb it
// belongs to; nil when it is of kind want or not recognized (the decoder
// then says what is wrong).
func Check(data []byte, want string) error {
	k := Detect(data)
	if k == nil || k.Name == want {
		return nil
	}
	return fmt.Errorf("this is %s, not %s", Describe(data), article(title(want)))
}

// Describe names the kind of a document for a message: "a placement
// scenario (an input of optd bound or optd search)", or "" when unknown.
func Describe(data []byte) string {
	k := Detect(data)
	if k == nil {
		return ""
	}
	return article(title(k.Name)) + " (" + k.For + ")"
}

// title is the name of a kind in prose: "placement scenario", "ITA instance".
func title(name string) string {
	return strings.Replace(strings.ReplaceAll(name, "-", " "), "ita ", "ITA ", 1)
}

func article(s string) string {
	if strings.HasPrefix(s, "ITA") {
		return "an " + s
	}
	return "a " + s
}

package policy_test

import (
	"testing"

	"github.com/optd/optd/policy"
)

// Parameter names are snake_case; the kebab-case of earlier versions is
// accepted in specs and mapped, and a pipeline's stage name is left as it is.
func TestParamNameAcceptsKebabCase(t *testing.T) {
	for in, want := range map[string]string{
		"free_fraction": "free_fraction", "free-fraction": "free_fraction", "per-job": "per_job", "base": "base",
		"haste-a.beta_fitness": "haste-a.beta_fitness", "sepb.kill-factor": "sepb.kill_factor",
	} {
		if got := policy.ParamName(in); got != want {
			t.Errorf("ParamName(%q) = %q, want %q", in, got, want)
		}
	}
	_, params, err := policy.ParsePlacementSpec("state-threshold:base=2;per-job=1.5;free_fraction=0.5")
	if err != nil || params["per_job"] != 1.5 || params["free_fraction"] != 0.5 || len(params) != 3 {
		t.Errorf("got %v, %v", params, err)
	}
	if _, _, err := policy.ParsePlacementSpec("state-threshold:per-job=1;per_job=2"); err == nil {
		t.Error("the same parameter under both spellings is accepted")
	}
}

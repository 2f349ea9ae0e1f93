package search

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/optd/optd/internal/inputkind"
	"github.com/optd/optd/sim"
)

// Kinds of scenario `optd search` tunes on.
const (
	// KindPlacement is a reduce-placement scenario (docs/formats.md#placement-scenario): a
	// placement family, the mean fetch cost per job.
	KindPlacement = "placement"
	// KindCluster is a cluster scenario (docs/formats.md#cluster-scenario, `optd simulate`): a
	// heartbeat pipeline, the makespan or the mean response time.
	KindCluster = "cluster"
)

// placementOnlyKeys are top-level keys of a placement scenario that a
// cluster scenario does not have; "cluster" is the cluster scenario's own
// (required) key, unknown to a placement scenario.
var placementOnlyKeys = []string{"slots", "max_jobs_in_service", "arrival_rate", "service_rate", "workload"}

// scenario is a resolved --scenario with the identity the shards of one
// search must agree on.
type scenario struct {
	kind      string
	placement *sim.Scenario
	cluster   *sim.ClusterScenario
	// sha256 is the file's hash, or for a built-in scenario the hash of
	// its name (the name is its identity).
	sha256 string
}

// resolveScenario reads --scenario: a built-in cluster scenario name (those
// `optd simulate` accepts), else a JSON file whose top-level keys tell its
// kind (kindOf). A name that is both a built-in and a file is ambiguous.
func resolveScenario(arg string) (*scenario, error) {
	builtin := slices.Contains(sim.BuiltinClusterNames(), arg)
	data, readErr := os.ReadFile(arg)
	switch {
	case builtin && readErr == nil:
		return nil, fmt.Errorf("--scenario %q is both a built-in cluster scenario and a file; write ./%s for the file", arg, arg)
	case builtin:
		sc, err := sim.BuiltinCluster(arg)
		if err != nil {
			return nil, fmt.Errorf("--scenario: %w", err)
		}
		return &scenario{kind: KindCluster, cluster: sc, sha256: hash([]byte("optd built-in cluster scenario " + arg))}, nil
	case readErr != nil:
		return nil, fmt.Errorf("--scenario %q: neither a built-in cluster scenario (%s) nor a readable file: %v",
			arg, strings.Join(sim.BuiltinClusterNames(), ", "), readErr)
	}
	kind, err := kindOf(data)
	if err != nil {
		return nil, fmt.Errorf("--scenario %s: %w", arg, err)
	}
	out := &scenario{kind: kind, sha256: hash(data)}
	if kind == KindCluster {
		out.cluster, err = sim.DecodeClusterScenario(bytes.NewReader(data), filepath.Dir(arg))
	} else {
		out.placement, err = sim.DecodeScenario(data, filepath.Dir(arg))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", arg, err)
	}
	return out, nil
}

// kindOf tells a placement scenario from a cluster scenario by its
// top-level keys: "cluster" makes a cluster scenario, any of
// placementOnlyKeys a placement scenario; both or neither is an error
// naming them.
func kindOf(data []byte) (string, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return "", fmt.Errorf("not a JSON scenario object: %v", err)
	}
	_, cluster := top["cluster"]
	var placement []string
	for _, k := range placementOnlyKeys {
		if _, ok := top[k]; ok {
			placement = append(placement, fmt.Sprintf("%q", k))
		}
	}
	switch {
	case cluster && len(placement) > 0:
		return "", fmt.Errorf(`ambiguous: "cluster" makes it a cluster scenario, %s a placement scenario`, strings.Join(placement, ", "))
	case cluster:
		return KindCluster, nil
	case len(placement) > 0:
		return KindPlacement, nil
	}
	if what := inputkind.Describe(data); what != "" {
		return "", fmt.Errorf("this is %s, not a scenario", what)
	}
	return "", fmt.Errorf(`neither a cluster scenario (no "cluster") nor a placement scenario (none of %s)`, strings.Join(placementOnlyKeys, ", "))
}

func hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/optd/optd/internal/errkind"
)

// ErrUnknownScenario is returned by BuiltinCluster for an unknown name.
var ErrUnknownScenario = errkind.New(errkind.Invalid, "sim: unknown scenario")

// builtinClusters are the named scenarios of docs/formats.md#cluster-scenario (and a few
// variants); each call builds a fresh scenario.
var builtinClusters = map[string]func() *ClusterScenario{}

func registerCluster(name string, f func() *ClusterScenario) {
	if _, dup := builtinClusters[name]; dup {
		panic("sim: duplicate built-in scenario " + name)
	}
	builtinClusters[name] = f
}

func init() {
	for _, t := range []string{"haste-table2", "haste-table3", "haste-table4", "haste-table5"} {
		registerCluster(t, func() *ClusterScenario { return hasteScenario(t, t, 0) })
	}
	for _, iv := range []int{60, 120} {
		name := fmt.Sprintf("haste-table4-successive-%d", iv)
		registerCluster(name, func() *ClusterScenario { return hasteScenario(name, "haste-table4", float64(iv)) })
	}
}

// BuiltinClusterNames lists the built-in cluster scenarios, sorted.
func BuiltinClusterNames() []string {
	names := make([]string, 0, len(builtinClusters))
	for n := range builtinClusters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// BuiltinCluster returns a fresh copy of the named built-in scenario.
func BuiltinCluster(name string) (*ClusterScenario, error) {
	f, ok := builtinClusters[name]
	if !ok {
		return nil, fmt.Errorf("%w %q (built-in: %s)", ErrUnknownScenario, name, strings.Join(BuiltinClusterNames(), ", "))
	}
	return f(), nil
}

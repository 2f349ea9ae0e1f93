// Package speculation holds the speculative-execution policies: Hadoop's
// default, LATE (Zaharia et al., OSDI'08), DynamicMR's SEPB (Tang et al.,
// IEEE TCC 2014) and BASE (Guo et al., IEEE Cluster'12). A Speculator
// launches copies of slow attempts on the node that heartbeats (and SEPB
// kills stragglers); SEPB and BASE are also launch filters that vet the
// copies other add-ons propose. This file names and registers them.
package speculation

import "github.com/optd/optd/policy"

// Names of the speculation policies.
const (
	NameSpeculationHadoop = "speculation-hadoop"
	NameLATE              = "late"
	NameSEPB              = "sepb"
	NameBASE              = "base"
)

func init() {
	policy.Must(policy.RegisterAddOn(NameSpeculationHadoop, func(policy.HeartbeatConfig) (policy.Stages, error) {
		return policy.Stages{Speculators: []policy.Speculator{NewHadoopSpeculation()}}, nil
	}))
	policy.Must(policy.RegisterAddOn(NameLATE, func(policy.HeartbeatConfig) (policy.Stages, error) {
		return policy.Stages{Speculators: []policy.Speculator{NewLATE()}}, nil
	}))
	policy.Must(policy.RegisterAddOn(NameSEPB, func(policy.HeartbeatConfig) (policy.Stages, error) {
		s := NewSEPB()
		return policy.Stages{Speculators: []policy.Speculator{s}, Filters: []policy.LaunchFilter{s}}, nil
	}))
	policy.Must(policy.RegisterAddOn(NameBASE, func(cfg policy.HeartbeatConfig) (policy.Stages, error) {
		b := NewBASE(cfg.Seed)
		return policy.Stages{Speculators: []policy.Speculator{b}, Filters: []policy.LaunchFilter{b}}, nil
	}))
}

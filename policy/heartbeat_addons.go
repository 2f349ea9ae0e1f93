package policy

// Names of the slot, speculation and sharing policies (CONTRACTS §5) and
// their registration. Each factory builds fresh stages with the papers'
// defaults; the stages are Tunable.
const (
	NameMRv1Static        = "mrv1-static"
	NamePIDHSA            = "pi-dhsa"
	NamePDDHSA            = "pd-dhsa"
	NameDelayScheduling   = "delay-scheduling"
	NameSlotPreScheduling = "slot-prescheduling"
	// NameLoadBalance is Hadoop 1's own per-node map cap (the load manager
	// Slot PreScheduling relaxes), without the pre-scheduling exemption: the
	// MRv1 baseline of paper 003. An extension of CONTRACTS §5.
	NameLoadBalance       = "load-balance"
	NameSpeculationHadoop = "speculation-hadoop"
	NameLATE              = "late"
	NameSEPB              = "sepb"
	NameBASE              = "base"
	NameDynamicAdjust     = "dynamic-adjust"
	// Resource stealing: "resource-stealing-" + a StealMode's name.
	NameResourceStealingPrefix = "resource-stealing-"
)

func init() {
	mustRegisterAssignment(NameMRv1Static, func(HeartbeatConfig) (Stages, error) {
		return Stages{Assigner: &FairSlots{name: NameMRv1Static}}, nil
	})
	mustRegisterAssignment(NamePIDHSA, func(HeartbeatConfig) (Stages, error) {
		d, err := NewPIDHSA(DefaultDHSAParams())
		return Stages{Assigner: &FairSlots{name: NamePIDHSA}, SlotPolicy: d}, err
	})
	mustRegisterAssignment(NamePDDHSA, func(HeartbeatConfig) (Stages, error) {
		d, err := NewPDDHSA(DefaultDHSAParams())
		return Stages{Assigner: d}, err
	})
	mustRegisterAddOn(NameDelayScheduling, func(HeartbeatConfig) (Stages, error) {
		d, err := NewDelayScheduling(5, 5)
		return Stages{Filters: []LaunchFilter{d}}, err
	})
	mustRegisterAddOn(NameSlotPreScheduling, func(HeartbeatConfig) (Stages, error) {
		return Stages{Filters: []LaunchFilter{&SlotPreScheduling{Enabled: true}}}, nil
	})
	mustRegisterAddOn(NameLoadBalance, func(HeartbeatConfig) (Stages, error) {
		return Stages{Filters: []LaunchFilter{&SlotPreScheduling{Enabled: false}}}, nil
	})
}

func mustRegisterAddOn(name string, f StagesFactory) {
	if err := RegisterAddOn(name, f); err != nil {
		panic(err)
	}
}

func init() {
	mustRegisterAddOn(NameSpeculationHadoop, func(HeartbeatConfig) (Stages, error) {
		return Stages{Speculators: []Speculator{NewHadoopSpeculation()}}, nil
	})
	mustRegisterAddOn(NameLATE, func(HeartbeatConfig) (Stages, error) {
		return Stages{Speculators: []Speculator{NewLATE()}}, nil
	})
	mustRegisterAddOn(NameSEPB, func(HeartbeatConfig) (Stages, error) {
		s := NewSEPB()
		return Stages{Speculators: []Speculator{s}, Filters: []LaunchFilter{s}}, nil
	})
	mustRegisterAddOn(NameBASE, func(cfg HeartbeatConfig) (Stages, error) {
		b := NewBASE(cfg.Seed)
		// the filter is a view of the same BASE that is not an Observer, so
		// the pipeline reports each finished task to BASE once
		return Stages{Speculators: []Speculator{b}, Filters: []LaunchFilter{baseFilter{b}}}, nil
	})
}

func init() {
	for _, m := range []StealMode{StealEven, StealFCM, StealSTLM, StealLTLM, StealSTM, StealLTM} {
		mustRegisterAddOn(NameResourceStealingPrefix+m.String(), func(HeartbeatConfig) (Stages, error) {
			return Stages{Sharers: []Sharer{NewResourceStealing(m)}}, nil
		})
	}
	mustRegisterAddOn(NameDynamicAdjust, func(HeartbeatConfig) (Stages, error) {
		return Stages{Sharers: []Sharer{NewDynamicAdjust()}}, nil
	})
}

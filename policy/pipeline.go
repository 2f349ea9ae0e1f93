package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/optd/optd/models"
)

// Pipeline is a heartbeat policy assembled from a spec (docs/formats.md#cluster-scenario): one
// assignment policy and its add-ons, each stage at its fixed place (see
// NewPipeline). It is not safe for concurrent use (its stages keep state).
type Pipeline struct {
	spec        string
	assigner    Assigner
	slots       SlotPolicy
	filters     []LaunchFilter
	speculators []Speculator
	sharers     []Sharer
	placer      ReducePlacer
	observers   []Observer
	committers  []Committer
	initialized bool
	maxStarts   int // HeartbeatConfig.MaxStarts
}

// NewPipeline builds the pipeline of a spec "assignment[+addon...]", e.g.
// "haste", "fair+resource-stealing-ltm+base",
// "pi-dhsa+sepb+slot-prescheduling". Unknown names, a missing or repeated
// assignment, repeated items and two slot policies are errors naming the
// item.
//
// The stages run on every heartbeat in this order, and here is why:
//
//  1. SlotPolicy: the number of map/reduce slots the node offers is the
//     frame every later stage counts free slots in, so it is fixed first
//     (DHSA borrows idle slots of one type for the other here).
//  2. Assigner, with every LaunchFilter on each candidate: pending tasks
//     come before speculative copies (Hadoop, LATE and DynamicMR's SEPB all
//     serve pending work first), and filters sit inside the assignment loop
//     because delay scheduling and Slot PreScheduling veto one candidate
//     and let the next one (another job) take the slot.
//  3. Speculators: only what the assignment left free is available for
//     copies, and kills (SEPB, BASE) are decided with the starts known.
//  4. Sharers: resource stealing may only hand out resources that are still
//     idle after everything else, and DynamicAdjust rebalances among the
//     tasks that will actually run, so sharing comes last.
func NewPipeline(spec string, cfg HeartbeatConfig) (*Pipeline, error) {
	items := strings.Split(spec, "+")
	p := &Pipeline{spec: spec, maxStarts: max(cfg.MaxStarts, 0)}
	seen := map[string]bool{}
	for i, raw := range items {
		name := strings.TrimSpace(raw)
		if name == "" {
			return nil, fmt.Errorf("%w: policy spec %q: empty item at position %d", ErrUnknownPolicy, spec, i+1)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: policy spec %q: %q listed twice", ErrInvalidConfig, spec, name)
		}
		seen[name] = true
		e, ok := lookup(name, stageKind(i > 0))
		if !ok {
			return nil, unknownItem(spec, name, i > 0)
		}
		st, err := e.stages(cfg)
		if err != nil {
			return nil, fmt.Errorf("policy spec %q: %s: %w", spec, name, err)
		}
		if err := p.add(spec, name, st); err != nil {
			return nil, err
		}
	}
	if p.assigner == nil {
		return nil, fmt.Errorf("%w: policy spec %q: no assignment policy", ErrInvalidConfig, spec)
	}
	if cfg.Placement != nil {
		e, ok := lookup(ReducePlacementStage, kindReducePlacer)
		if !ok {
			return nil, fmt.Errorf("%w: policy spec %q: a placement policy needs the %q stage; import policy/builtin", ErrUnknownPolicy, spec, ReducePlacementStage)
		}
		st, err := e.stages(cfg)
		if err != nil {
			return nil, fmt.Errorf("policy spec %q: %s: %w", spec, ReducePlacementStage, err)
		}
		if err := p.add(spec, ReducePlacementStage, st); err != nil {
			return nil, err
		}
	}
	stateful := map[string]bool{}
	for _, s := range p.members() {
		if _, ok := s.(Stateful); ok {
			name := s.(Plugin).Name()
			if stateful[name] {
				return nil, fmt.Errorf("%w: policy spec %q: two stages named %q keep state (their snapshots would collide)", ErrInvalidConfig, spec, name)
			}
			stateful[name] = true
		}
	}
	return p, nil
}

// NewPlacedPipeline is NewPipeline with reducers placed by the placement
// policy of spec placement (a name, with a family's parameters if any:
// ParsePlacementSpec; empty: none), built with the configuration's seed and
// placement model (HeartbeatConfig.Placement): `optd simulate --placement`.
func NewPlacedPipeline(spec, placement string, cfg HeartbeatConfig) (*Pipeline, error) {
	if placement != "" {
		name, params, err := ParsePlacementSpec(placement)
		if err != nil {
			return nil, fmt.Errorf("placement: %w", err)
		}
		p, err := NewPlacement(name, PlacementConfig{Seed: cfg.Seed, Params: params, Model: cfg.PlacementModel})
		if err != nil {
			return nil, fmt.Errorf("placement: %w", err)
		}
		cfg.Placement = p
	}
	return NewPipeline(spec, cfg)
}

func stageKind(addOn bool) kind {
	if addOn {
		return kindAddOn
	}
	return kindAssignment
}

func unknownItem(spec, name string, addOn bool) error {
	if addOn {
		if _, isAssign := lookup(name, kindAssignment); isAssign {
			return fmt.Errorf("%w: policy spec %q: %q is an assignment policy and must come first", ErrInvalidConfig, spec, name)
		}
		return fmt.Errorf("%w: policy spec %q: add-on %q (known: %s)", ErrUnknownPolicy, spec, name, strings.Join(AddOnNames(), ", "))
	}
	if _, isAddOn := lookup(name, kindAddOn); isAddOn {
		return fmt.Errorf("%w: policy spec %q: %q is an add-on; start with an assignment policy (%s)", ErrInvalidConfig, spec, name, strings.Join(AssignmentNames(), ", "))
	}
	return fmt.Errorf("%w: policy spec %q: assignment %q (known: %s)", ErrUnknownPolicy, spec, name, strings.Join(AssignmentNames(), ", "))
}

func (p *Pipeline) add(spec, name string, st Stages) error {
	if st.Assigner != nil {
		if p.assigner != nil {
			return fmt.Errorf("%w: policy spec %q: %q brings a second assignment policy", ErrInvalidConfig, spec, name)
		}
		p.assigner = st.Assigner
	}
	if st.SlotPolicy != nil {
		if p.slots != nil {
			return fmt.Errorf("%w: policy spec %q: %q brings a second slot policy", ErrInvalidConfig, spec, name)
		}
		p.slots = st.SlotPolicy
	}
	p.filters = append(p.filters, st.Filters...)
	p.speculators = append(p.speculators, st.Speculators...)
	p.sharers = append(p.sharers, st.Sharers...)
	if st.Placer != nil {
		if p.placer != nil {
			return fmt.Errorf("%w: policy spec %q: %q brings a second reduce placer", ErrInvalidConfig, spec, name)
		}
		p.placer = st.Placer
	}
	p.observers, p.committers = p.observers[:0], p.committers[:0]
	for _, s := range p.members() {
		if o, ok := s.(Observer); ok {
			p.observers = append(p.observers, o)
		}
		if c, ok := s.(Committer); ok {
			p.committers = append(p.committers, c)
		}
	}
	return nil
}

// members returns the pipeline's stage objects, each once (a stage may
// play several parts, e.g. SEPB is a Speculator and a LaunchFilter), in
// stage order: assigner, slot policy, filters, speculators, sharers, reduce
// placer.
func (p *Pipeline) members() []any {
	var out []any
	seen := map[any]bool{}
	add := func(s any) {
		if s == nil {
			return
		}
		if reflect.TypeOf(s).Comparable() {
			if seen[s] {
				return
			}
			seen[s] = true
		}
		out = append(out, s)
	}
	add(p.assigner)
	if p.slots != nil {
		add(p.slots)
	}
	for _, f := range p.filters {
		add(f)
	}
	for _, s := range p.speculators {
		add(s)
	}
	for _, s := range p.sharers {
		add(s)
	}
	if p.placer != nil {
		add(p.placer)
	}
	return out
}

// HasObservers reports whether some stage implements Observer (so the
// ledger must build views on task completions).
func (p *Pipeline) HasObservers() bool { return len(p.observers) > 0 }

// Spec returns the spec the pipeline was built from.
func (p *Pipeline) Spec() string { return p.spec }

// Shares reports whether the pipeline has a Sharer stage: only a Sharer
// issues ActionAdjust, so without one every attempt runs with exactly the
// resources it requested (what sim.ClusterLowerBound relies on).
func (p *Pipeline) Shares() bool { return len(p.sharers) > 0 }

// SetsSlots reports whether the pipeline has a SlotPolicy: only a
// SlotPolicy issues ActionSlots, so without one a node keeps its
// configured map and reduce slots.
func (p *Pipeline) SetsSlots() bool { return p.slots != nil }

// Init runs the assigner's Initializer once (HaSTE's ITA).
func (p *Pipeline) Init(ctx context.Context, c *ClusterView) error {
	if p.initialized {
		return nil
	}
	p.initialized = true
	if in, ok := p.assigner.(Initializer); ok {
		return in.Init(ctx, c)
	}
	return nil
}

// TaskFinished forwards a successful attempt to every Observer stage.
func (p *Pipeline) TaskFinished(c *ClusterView, a *AttemptView, durationS float64) {
	for _, o := range p.observers {
		o.TaskFinished(c, a, durationS)
	}
}

// Heartbeat decides node n's heartbeat: its actions, the candidates the
// filters and gates refused, and the actions dropped as a stage's mistake.
// The views are not modified.
func (p *Pipeline) Heartbeat(c *ClusterView, n *NodeView) Decision {
	hb := NewHeartbeat(c, n)
	d := Decision{}
	if p.slots != nil && c.SlotBased {
		p.applySlots(hb)
	}
	p.assign(hb, &d)
	for _, s := range p.speculators {
		actions, vetoes := s.Speculate(hb)
		for _, v := range vetoes {
			d.veto(v)
		}
		for _, a := range actions {
			p.accept(hb, &d, a)
		}
	}
	p.share(hb, &d)
	d.Actions = hb.Actions
	return d
}

// veto records v unless the heartbeat already refused the same candidate
// for the same stage: the assigner offers a vetoed candidate again each
// time it ranks, after every start.
func (d *Decision) veto(v Veto) {
	for _, o := range d.Vetoes {
		if o.Stage == v.Stage && o.Kind == v.Kind && o.Job == v.Job && o.Type == v.Type && o.Task == v.Task && o.Attempt == v.Attempt {
			return
		}
	}
	d.Vetoes = append(d.Vetoes, v)
}

func (p *Pipeline) applySlots(hb *Heartbeat) {
	m, r, reason := p.slots.Slots(hb)
	usedM, usedR := hb.Node.MapSlots-hb.Node.FreeMapSlots, hb.Node.ReduceSlots-hb.Node.FreeReduceSlots
	m, r = max(m, 0), max(r, 0)
	if m != hb.Node.MapSlots || r != hb.Node.ReduceSlots {
		hb.Actions = append(hb.Actions, Action{Kind: ActionSlots, Node: hb.Node.ID, MapSlots: m, ReduceSlots: r, Reason: reason})
	}
	hb.FreeMapSlots, hb.FreeReduceSlots = max(m-usedM, 0), max(r-usedR, 0)
}

// assign runs the Assigner/LaunchFilter loop of stage 2: the first ranked
// candidate that fits and that every filter admits starts, then the
// assigner ranks again, until none starts or maxStarts did.
func (p *Pipeline) assign(hb *Heartbeat, d *Decision) {
	for starts := 0; p.maxStarts == 0 || starts < p.maxStarts; starts++ {
		accepted := false
		for _, a := range p.assigner.Rank(hb) {
			if a.Kind != ActionStart || hb.Taken(a.Job, a.Type, a.Task) || !hb.Fits(a.SlotOrType(), a.Resources) {
				continue
			}
			if p.vetted(hb, d, &a) {
				p.commit(hb, a)
				accepted = true
				break
			}
		}
		if !accepted {
			return
		}
	}
}

// vetted runs the reduce placer (on a reduce Start) and the filters on
// candidate a: true if all admit it, the placer's reason appended to a's;
// else the first veto is recorded and committed.
func (p *Pipeline) vetted(hb *Heartbeat, d *Decision, a *Action) bool {
	refuse := func(stage, why string) bool {
		v := VetoOf(stage, *a, why)
		d.veto(v)
		for _, c := range p.committers {
			c.Commit(hb, *a, &v)
		}
		return false
	}
	placed := ""
	if p.placer != nil && a.Kind == ActionStart && a.Type == models.ReduceTask {
		ok, why := p.placer.PlaceReduce(hb, *a)
		if !ok {
			return refuse(p.placer.Name(), why)
		}
		placed = why
	}
	for _, f := range p.filters {
		if ok, why := f.Admit(hb, *a); !ok {
			return refuse(f.Name(), why)
		}
	}
	if placed != "" {
		a.Reason += "; " + placed
	}
	return true
}

// commit accepts a into the heartbeat and tells the Committers.
func (p *Pipeline) commit(hb *Heartbeat, a Action) {
	hb.commit(a)
	for _, c := range p.committers {
		c.Commit(hb, a, nil)
	}
}

// accept commits a speculator's action if it is valid here.
func (p *Pipeline) accept(hb *Heartbeat, d *Decision, a Action) {
	switch a.Kind {
	case ActionSpeculate:
		if a.Node != hb.Node.ID || !hb.Fits(a.SlotOrType(), a.Resources) {
			d.Dropped++
			return
		}
		// Filters vet copies too (BASE's benefit test, SEPB's pending-task
		// window), so they also apply to another add-on's copies; a veto is
		// a decision, not a mistake.
		if !p.vetted(hb, d, &a) {
			return
		}
	case ActionKill:
	default:
		d.Dropped++
		return
	}
	p.commit(hb, a)
}

// share runs the Sharers and keeps only grants that fit the node: the sum
// over the node's attempts of their grants (the request where no Adjust
// names them) plus this heartbeat's starts must stay within Capacity.
func (p *Pipeline) share(hb *Heartbeat, d *Decision) {
	if len(hb.Node.Capacity) == 0 {
		return
	}
	grant := map[int]models.Resources{}
	killed := map[int]bool{}
	used := hb.Node.Capacity.Sub(hb.Free) // requests of running attempts and of new starts
	for _, a := range hb.Actions {
		if a.Kind == ActionKill {
			killed[a.Attempt] = true
		}
	}
	for _, s := range p.sharers {
		for _, a := range s.Share(hb) {
			at := hb.attempt(a.Attempt)
			if a.Kind != ActionAdjust || at == nil || killed[at.ID] || len(a.Resources) != len(used) {
				d.Dropped++
				continue
			}
			old := at.Requested
			if g, ok := grant[at.ID]; ok {
				old = g
			}
			next := used.Sub(old).Add(a.Resources)
			if !next.Fits(hb.Node.Capacity) || hasNegative(a.Resources) {
				d.Dropped++
				continue
			}
			used, grant[at.ID] = next, a.Resources
			hb.Actions = append(hb.Actions, a)
		}
	}
}

func hasNegative(r models.Resources) bool {
	for _, v := range r {
		if v < 0 {
			return true
		}
	}
	return false
}

// tunableStages returns the pipeline's Tunable stages, each once, with
// their names, in stage order.
func (p *Pipeline) tunableStages() ([]string, []Tunable) {
	var names []string
	var out []Tunable
	for _, s := range p.members() {
		t, ok := s.(Tunable)
		if !ok {
			continue
		}
		name := ""
		if pl, ok := s.(Plugin); ok {
			name = pl.Name()
		}
		names = append(names, name)
		out = append(out, t)
	}
	return names, out
}

// Params lists the parameters of every Tunable stage of the pipeline, each
// named "STAGE.PARAM" (e.g. "sepb.kill_factor", "pi-dhsa.map_slot_weight"),
// with the paper's default and the search range.
func (p *Pipeline) Params() []Param {
	names, stages := p.tunableStages()
	var out []Param
	for k, s := range stages {
		for _, q := range s.Params() {
			q.Name = names[k] + "." + q.Name
			out = append(out, q)
		}
	}
	return out
}

// SetParam sets parameter "STAGE.PARAM" (see Params) of a fresh pipeline;
// an unknown stage or parameter or a value out of range is an error and
// changes nothing.
func (p *Pipeline) SetParam(key string, v float64) error {
	stage, param, ok := strings.Cut(key, ".")
	if !ok {
		return fmt.Errorf("%w: parameter %q: want STAGE.PARAM", ErrInvalidConfig, key)
	}
	names, stages := p.tunableStages()
	for k, s := range stages {
		if names[k] == stage {
			return s.SetParam(param, v)
		}
	}
	return fmt.Errorf("%w: policy spec %q has no tunable stage %q (tunable: %s)", ErrInvalidConfig, p.spec, stage, strings.Join(names, ", "))
}

// statefulStages returns the pipeline's Stateful stages by name.
func (p *Pipeline) statefulStages() map[string]Stateful {
	var out map[string]Stateful
	for _, s := range p.members() {
		st, ok := s.(Stateful)
		if !ok {
			continue
		}
		if out == nil {
			out = map[string]Stateful{}
		}
		out[s.(Plugin).Name()] = st
	}
	return out
}

// snapshot is a pipeline's state: whether it ran its Initializer, and each
// Stateful stage's own snapshot by stage name.
type snapshot struct {
	Initialized bool                       `json:"initialized"`
	Stages      map[string]json.RawMessage `json:"stages"`
}

// Snapshot returns the pipeline's learned state as JSON (the same state
// gives the same bytes): nil for a pipeline whose stages learn nothing.
// Restore it into a fresh pipeline of the same spec and configuration.
func (p *Pipeline) Snapshot() ([]byte, error) {
	stages := p.statefulStages()
	if len(stages) == 0 {
		return nil, nil
	}
	s := snapshot{Initialized: p.initialized, Stages: make(map[string]json.RawMessage, len(stages))}
	for name, st := range stages {
		data, err := st.Snapshot()
		if err != nil {
			return nil, fmt.Errorf("policy spec %q: snapshot of %s: %w", p.spec, name, err)
		}
		s.Stages[name] = data
	}
	return json.Marshal(s)
}

// Restore sets a fresh pipeline's state from one of its Snapshots (nil:
// nothing to restore). A snapshot of another pipeline, or a malformed one,
// is ErrInvalidConfig.
func (p *Pipeline) Restore(data []byte) error {
	if data == nil {
		return nil
	}
	var s snapshot
	if err := DecodeSnapshot(data, &s); err != nil {
		return fmt.Errorf("policy spec %q: %w", p.spec, err)
	}
	stages := p.statefulStages()
	for name := range s.Stages {
		if stages[name] == nil {
			return fmt.Errorf("%w: policy spec %q: the snapshot has state for a stage %q it does not have", ErrInvalidConfig, p.spec, name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(stages)) {
		data, ok := s.Stages[name]
		if !ok {
			return fmt.Errorf("%w: policy spec %q: the snapshot has no state for stage %q", ErrInvalidConfig, p.spec, name)
		}
		if err := stages[name].Restore(data); err != nil {
			return fmt.Errorf("%w: policy spec %q: snapshot of %s: %w", ErrInvalidConfig, p.spec, name, err)
		}
	}
	p.initialized = s.Initialized
	return nil
}

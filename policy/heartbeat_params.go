package policy

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Param describes one tunable parameter of a heartbeat policy: its name, the
// paper's default and the range a policy search may explore.
type Param struct {
	Name     string
	Default  float64
	Min, Max float64
	// Integer parameters take whole values only.
	Integer bool
	Doc     string
}

// Tunable is implemented by the heartbeat stages of this package that have
// parameters (slots, speculation and sharing policies): Params lists them
// with the paper's defaults, SetParam changes one. A policy search builds a
// stage by name, reads Params, and sets values inside [Min, Max].
type Tunable interface {
	Params() []Param
	SetParam(name string, v float64) error
}

// tunable binds Param descriptions to the struct fields they set; a stage
// embeds nothing, it returns a tunable from a method and forwards to it.
type tunable []boundParam

type boundParam struct {
	Param
	f *float64
	i *int
}

func floatParam(f *float64, p Param) boundParam { return boundParam{Param: p, f: f} }

func intParam(i *int, p Param) boundParam {
	p.Integer = true
	return boundParam{Param: p, i: i}
}

func (t tunable) params() []Param {
	out := make([]Param, len(t))
	for k, b := range t {
		out[k] = b.Param
	}
	return out
}

// set changes a parameter after checking its name, range and integrality;
// on error nothing changes.
func (t tunable) set(policy, name string, v float64) error {
	for _, b := range t {
		if b.Name != name {
			continue
		}
		if !(v >= b.Min && v <= b.Max) {
			return fmt.Errorf("%w: %s: %s = %v outside [%v, %v]", ErrInvalidConfig, policy, name, v, b.Min, b.Max)
		}
		if b.i != nil {
			if v != math.Trunc(v) {
				return fmt.Errorf("%w: %s: %s = %v must be a whole number", ErrInvalidConfig, policy, name, v)
			}
			*b.i = int(v)
			return nil
		}
		*b.f = v
		return nil
	}
	names := make([]string, len(t))
	for k, b := range t {
		names[k] = b.Name
	}
	slices.Sort(names)
	return fmt.Errorf("%w: %s has no parameter %q (known: %s)", ErrInvalidConfig, policy, name, strings.Join(names, ", "))
}

// check verifies every current value is inside its range (used by the
// constructors, so a hand-built struct with a bad field is an error, not a
// silent misbehaviour).
func (t tunable) check(policy string) error {
	for _, b := range t {
		v := 0.0
		if b.i != nil {
			v = float64(*b.i)
		} else {
			v = *b.f
		}
		if !(v >= b.Min && v <= b.Max) {
			return fmt.Errorf("%w: %s: %s = %v outside [%v, %v]", ErrInvalidConfig, policy, b.Name, v, b.Min, b.Max)
		}
	}
	return nil
}

// tunableStages returns the pipeline's Tunable stages, each once, with
// their names, in pipeline order.
func (p *Pipeline) tunableStages() ([]string, []Tunable) {
	var names []string
	var out []Tunable
	seen := map[Tunable]bool{}
	add := func(s any) {
		t, ok := s.(Tunable)
		if !ok || seen[t] {
			return
		}
		seen[t] = true
		name := ""
		if pl, ok := s.(Plugin); ok {
			name = pl.Name()
		}
		names = append(names, name)
		out = append(out, t)
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

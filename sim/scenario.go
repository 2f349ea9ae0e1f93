package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/internal/strictjson"
	"github.com/optd/optd/models"
)

// ErrInvalidScenario is wrapped by every error about a scenario file.
var ErrInvalidScenario = errkind.New(errkind.Invalid, "sim: invalid scenario")

// ScenarioError says which field of a scenario is wrong, its value and why.
// Field is the JSON path ("max_jobs_in_service", "slots.cost.min",
// "trace.load"). Errors about the embedded workload or slot-cost law are the
// models package's *ValidationError, with the path prefixed.
type ScenarioError struct {
	Field  string
	Value  any
	Reason string
}

func (e *ScenarioError) Error() string {
	var b strings.Builder
	b.WriteString(ErrInvalidScenario.Error())
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		if e.Value != nil {
			fmt.Fprintf(&b, " = %v", e.Value)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	return b.String()
}

// Unwrap returns ErrInvalidScenario.
func (e *ScenarioError) Unwrap() error { return ErrInvalidScenario }

func invalidf(field string, value any, format string, args ...any) error {
	return &ScenarioError{Field: field, Value: value, Reason: fmt.Sprintf(format, args...)}
}

// Limits on scenario sizes, so that a typo cannot ask for a run that never
// ends or exhausts memory.
const (
	MaxSlots        = 1 << 20
	MaxJobs         = 1 << 30
	MaxReplications = 1 << 20
)

// Scenario is a decoded placement scenario (docs/formats.md#placement-scenario): the placement model, the job
// stream (a workload law with Poisson arrivals and exponential work, or a
// trace) and the experiment (jobs, warm-up, replications, seed).
//
//	{ "slots": {"costs": [1, 5, 9]} | {"count": 1000, "cost": {data law}},
//	  "max_jobs_in_service": 20, "arrival_rate": 0.6, "service_rate": 1.0,
//	  "max_waiting": null, "workload": {...docs/formats.md#workload...},
//	  "jobs": 50000, "warmup_jobs": 1000, "replications": 5, "seed": 1,
//	  "trace": {...optional, see TraceSpec...} }
//
// Required: slots, max_jobs_in_service, service_rate, and either arrival_rate,
// workload and jobs, or trace (then arrival_rate and workload must be absent
// and jobs is optional). Defaults: max_waiting null (unlimited), warmup_jobs
// 0, replications 1, seed 0. With slots {"count", "cost"} the costs are drawn
// once from the seed (stream StreamSlots), so every replication and every
// policy sees the same cluster. The cluster must have at least
// max_jobs_in_service·max R slots (docs/formats.md#placement-scenario, Tan et al. §II).
type Scenario struct {
	// SlotCosts are the fetch costs of the slots (given or drawn).
	SlotCosts []float64
	// SlotsExplicit reports that the costs were listed ({"costs": [...]}).
	SlotsExplicit bool
	// K is max_jobs_in_service.
	K int
	// ArrivalRate λ and ServiceRate μ (jobs per unit time; mean work 1/μ).
	// For a trace, ArrivalRate is the effective rate of the scaled trace.
	ArrivalRate, ServiceRate float64
	// MaxWaiting is the waiting room; -1 means unlimited (JSON null).
	MaxWaiting int
	// Workload is the law of (X, R); for a trace, the empirical joint law
	// of the trace jobs used.
	Workload *models.Workload
	// Jobs is the number of arrivals per replication; WarmupJobs of them
	// (the first) are excluded from the figures.
	Jobs, WarmupJobs int
	Replications     int
	Seed             uint64
	// Trace is set for trace scenarios.
	Trace *TraceSpec

	trace []traceJob
}

// scenarioJSON is the wire form; pointers distinguish absent fields.
type scenarioJSON struct {
	Slots            json.RawMessage `json:"slots"`
	MaxJobsInService *int            `json:"max_jobs_in_service"`
	ArrivalRate      *float64        `json:"arrival_rate"`
	ServiceRate      *float64        `json:"service_rate"`
	MaxWaiting       *int            `json:"max_waiting"`
	Workload         json.RawMessage `json:"workload"`
	Jobs             *int            `json:"jobs"`
	WarmupJobs       *int            `json:"warmup_jobs"`
	Replications     *int            `json:"replications"`
	Seed             *uint64         `json:"seed"`
	Trace            json.RawMessage `json:"trace"`
}

type slotsJSON struct {
	Costs []float64       `json:"costs"`
	Count *int            `json:"count"`
	Cost  json.RawMessage `json:"cost"`
}

// LoadScenario reads and decodes the scenario file at path; relative file
// names inside it (trace files, empirical samples) are resolved against the
// directory of path. Errors start with path.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sim: read scenario: %w", err)
	}
	s, err := DecodeScenario(data, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// strictDecode decodes one JSON object into v, rejecting unknown fields,
// trailing data and type mismatches with errors naming the field (prefixed
// by path).
func strictDecode(data []byte, path string, v any) error {
	return jsonError(strictjson.Decode(data, v), path)
}

// jsonError turns a strictjson error into a ScenarioError under path.
func jsonError(err error, path string) error {
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return err
	}
	field := se.Path
	switch {
	case path == "":
	case field == "":
		field = path
	case strings.HasPrefix(field, "["):
		field = path + field
	default:
		field = path + "." + field
	}
	var value any
	if se.Value != "" {
		value = se.Value
	}
	return invalidf(field, value, "%s", se.Reason)
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

func finitePositive(field string, v *float64) error {
	if v == nil {
		return invalidf(field, nil, "missing")
	}
	if math.IsNaN(*v) || math.IsInf(*v, 0) || *v <= 0 {
		return invalidf(field, *v, "must be a finite number > 0")
	}
	return nil
}

// DecodeScenario decodes a scenario strictly (see Scenario); baseDir resolves
// relative file names. Errors wrap ErrInvalidScenario (or
// models.ErrInvalidWorkload for the embedded laws) and name the field.
func DecodeScenario(data []byte, baseDir string) (*Scenario, error) {
	var j scenarioJSON
	if err := strictDecode(data, "", &j); err != nil {
		return nil, err
	}
	s := &Scenario{MaxWaiting: -1, Replications: 1}
	if j.Seed != nil {
		s.Seed = *j.Seed
	}
	if j.MaxJobsInService == nil {
		return nil, invalidf("max_jobs_in_service", nil, "missing")
	}
	if s.K = *j.MaxJobsInService; s.K < 1 || s.K > MaxSlots {
		return nil, invalidf("max_jobs_in_service", s.K, "must be an integer in [1, %d]", MaxSlots)
	}
	if err := finitePositive("service_rate", j.ServiceRate); err != nil {
		return nil, err
	}
	s.ServiceRate = *j.ServiceRate
	if j.MaxWaiting != nil {
		if s.MaxWaiting = *j.MaxWaiting; s.MaxWaiting < 0 {
			return nil, invalidf("max_waiting", s.MaxWaiting, "must be an integer ≥ 0, or null for unlimited")
		}
	}
	if j.Replications != nil {
		if s.Replications = *j.Replications; s.Replications < 1 || s.Replications > MaxReplications {
			return nil, invalidf("replications", s.Replications, "must be an integer in [1, %d]", MaxReplications)
		}
	}
	if err := s.decodeSlots(j.Slots, baseDir); err != nil {
		return nil, err
	}
	var maxR int
	if isNull(j.Trace) {
		if err := s.decodeModelStream(&j, baseDir); err != nil {
			return nil, err
		}
		maxR = s.Workload.MaxReduces()
	} else {
		if err := s.decodeTrace(&j, baseDir); err != nil {
			return nil, err
		}
		maxR = s.Trace.MaxReduces
	}
	if need := s.K * maxR; need > len(s.SlotCosts) {
		return nil, invalidf("slots", len(s.SlotCosts), "need at least max_jobs_in_service·max_reduces = %d·%d = %d slots", s.K, maxR, need)
	}
	if j.WarmupJobs != nil {
		if s.WarmupJobs = *j.WarmupJobs; s.WarmupJobs < 0 || s.WarmupJobs >= s.Jobs {
			return nil, invalidf("warmup_jobs", s.WarmupJobs, "must be an integer in [0, jobs = %d)", s.Jobs)
		}
	}
	return s, nil
}

func (s *Scenario) decodeSlots(raw json.RawMessage, baseDir string) error {
	if isNull(raw) {
		return invalidf("slots", nil, `missing: give {"costs": [...]} or {"count": N, "cost": {law}}`)
	}
	var sj slotsJSON
	if err := strictDecode(raw, "slots", &sj); err != nil {
		return err
	}
	hasCosts, hasCount, hasCost := sj.Costs != nil, sj.Count != nil, !isNull(sj.Cost)
	switch {
	case hasCosts && (hasCount || hasCost):
		return invalidf("slots.costs", nil, "must not be given together with count and cost")
	case hasCosts:
		if len(sj.Costs) == 0 || len(sj.Costs) > MaxSlots {
			return invalidf("slots.costs", nil, "must list between 1 and %d costs, got %d", MaxSlots, len(sj.Costs))
		}
		for i, c := range sj.Costs {
			if math.IsNaN(c) || math.IsInf(c, 0) || c < 0 {
				return invalidf(fmt.Sprintf("slots.costs[%d]", i), c, "must be a finite number ≥ 0")
			}
		}
		s.SlotCosts, s.SlotsExplicit = sj.Costs, true
		return nil
	case !hasCount:
		return invalidf("slots.count", nil, "missing (or give slots.costs)")
	case !hasCost:
		return invalidf("slots.cost", nil, "missing: the law of the slot costs")
	}
	n := *sj.Count
	if n < 1 || n > MaxSlots {
		return invalidf("slots.count", n, "must be an integer in [1, %d]", MaxSlots)
	}
	d, err := models.DecodeDist(sj.Cost, baseDir, "slots.cost")
	if err != nil {
		return err
	}
	rng := NewRand(s.Seed, StreamSlots)
	s.SlotCosts = make([]float64, n)
	for i := range s.SlotCosts {
		s.SlotCosts[i] = d.Sample(rng)
	}
	return nil
}

func (s *Scenario) decodeModelStream(j *scenarioJSON, baseDir string) error {
	if err := finitePositive("arrival_rate", j.ArrivalRate); err != nil {
		return err
	}
	s.ArrivalRate = *j.ArrivalRate
	if rho := s.ArrivalRate / s.ServiceRate; s.MaxWaiting < 0 && rho >= 1 {
		return invalidf("arrival_rate", s.ArrivalRate, "the queue is unstable: arrival_rate/service_rate = %g ≥ 1 with unlimited max_waiting", rho)
	}
	if isNull(j.Workload) {
		return invalidf("workload", nil, "missing (or give a trace)")
	}
	w, err := models.DecodeWorkloadField(j.Workload, baseDir, "workload")
	if err != nil {
		return err
	}
	s.Workload = w
	if j.Jobs == nil {
		return invalidf("jobs", nil, "missing")
	}
	if s.Jobs = *j.Jobs; s.Jobs < 1 || s.Jobs > MaxJobs {
		return invalidf("jobs", s.Jobs, "must be an integer in [1, %d]", MaxJobs)
	}
	return nil
}

// MaxReduces is the largest R a job of the scenario can have.
func (s *Scenario) MaxReduces() int {
	if s.Trace != nil {
		return s.Trace.MaxReduces
	}
	return s.Workload.MaxReduces()
}

// Model returns the placement model of the scenario.
func (s *Scenario) Model() *Model {
	return &Model{SlotCosts: s.SlotCosts, K: s.K, MaxWaiting: s.MaxWaiting}
}

// Source returns the job stream of replication rep: for a workload,
// Poisson(λ) arrivals, Exp(μ) works and (X, R) from the workload, each from
// its own stream of the replication's seed (see Stream); for a trace, its
// jobs (see TraceSpec).
func (s *Scenario) Source(rep int) Source {
	seed := ReplicationSeed(s.Seed, rep)
	if s.Trace != nil {
		return newTraceSource(s, seed)
	}
	return &poissonSource{
		n: s.Jobs, lambda: s.ArrivalRate, mu: s.ServiceRate, w: s.Workload,
		arr:  NewRand(seed, StreamArrivals),
		work: NewRand(seed, StreamWorks),
		jobs: NewRand(seed, StreamJobs),
	}
}

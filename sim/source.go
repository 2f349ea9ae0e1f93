package sim

import (
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/optd/optd/models"
	"github.com/optd/optd/models/trace"
	"github.com/optd/optd/thresholds"
)

// poissonSource is the stochastic job stream of docs/formats.md#placement-scenario: Poisson
// arrivals of rate λ, i.i.d. Exp(μ) works, i.i.d. (X, R) from the workload,
// each drawn from its own generator.
type poissonSource struct {
	n, i            int
	t               float64
	lambda, mu      float64
	w               *models.Workload
	arr, work, jobs *rand.Rand
}

func (p *poissonSource) Next() (JobSpec, bool) {
	if p.i >= p.n {
		return JobSpec{}, false
	}
	p.i++
	p.t += p.arr.ExpFloat64() / p.lambda
	x, r := p.w.Sample(p.jobs)
	return JobSpec{Arrival: p.t, Work: p.work.ExpFloat64() / p.mu, X: x, R: r}, true
}

// Work modes of a trace scenario.
const (
	// WorkExponential: i.i.d. Exp(service_rate) works, drawn per
	// replication, independent of the job (the model's assumption, §III-B).
	WorkExponential = "exponential"
	// WorkInputBytes: work proportional to the job's map input bytes,
	// B_i = input_i / mean(input) / service_rate, so that the mean work is
	// 1/service_rate (map time grows with the input it reads; §V-A of the
	// paper measures it growing with the data).
	WorkInputBytes = "input-bytes"
	// WorkShuffleBytes: the same with the shuffle bytes X (for traces
	// that record no input, e.g. Coflow).
	WorkShuffleBytes = "shuffle-bytes"
)

// TraceSpec is the optional "trace" object of a scenario: jobs replayed from
// a public trace instead of drawn from a workload law.
//
//	"trace": {"file": "data/swim/FB-2010_samples_24_times_1hr_0.tsv",
//	          "max_reduces": 10, "load": 0.5, "work": "exponential",
//	          "bytes_per_reduce": 1073741824}
//
// The file is read with trace.ReadFile (format detected from the content):
// SWIM FB-2009/FB-2010 (arrivals, shuffle bytes, R derived by SWIM's rule
// round((shuffle+output)/bytes_per_reduce)) or Coflow FB2010 (arrivals, R =
// the number of reducer racks, X = the sum of the per-reducer shuffle).
// Jobs with no shuffle (map-only) need no reduce slot and are left out. For
// each job used:
//
//   - X = shuffle bytes / 2^20 (MiB), so costs are in MiB·(fetch cost);
//   - R = min(reduces, max_reduces) (max_reduces is required: real jobs can
//     have thousands of reducers, the cluster must have K·max_reduces slots);
//     every reducer fetches Y = X/R (the model's equal split; the Coflow
//     per-reducer volumes are summed into X);
//   - arrival = (submit − first submit)·time_scale; time_scale defaults to
//     1, or is chosen so that the offered load Σ B_i/span equals "load"
//     (give one of the two);
//   - work B_i per "work": "exponential" (default), "input-bytes" or
//     "shuffle-bytes" (see the Work constants); mean work 1/service_rate.
//
// "jobs" (optional with a trace) takes the first jobs of the trace.
type TraceSpec struct {
	File           string   `json:"file"`
	MaxReduces     int      `json:"max_reduces"`
	TimeScale      *float64 `json:"time_scale,omitempty"`
	Load           *float64 `json:"load,omitempty"`
	Work           string   `json:"work,omitempty"`
	BytesPerReduce float64  `json:"bytes_per_reduce,omitempty"`
}

// traceJob is one trace job as used: arrival (scaled), X, R and the work
// for the bytes modes.
type traceJob struct {
	arrival, x, work float64
	r                int
}

func (s *Scenario) decodeTrace(j *scenarioJSON, baseDir string) error {
	if j.ArrivalRate != nil {
		return invalidf("arrival_rate", *j.ArrivalRate, "not allowed with a trace (arrivals come from the trace; use trace.load or trace.time_scale)")
	}
	if !isNull(j.Workload) {
		return invalidf("workload", nil, "not allowed with a trace ((X, R) come from the trace)")
	}
	var t TraceSpec
	if err := strictDecode(j.Trace, "trace", &t); err != nil {
		return err
	}
	if t.File == "" {
		return invalidf("trace.file", nil, "missing")
	}
	if t.MaxReduces < 1 || t.MaxReduces > models.MaxReducesLimit {
		return invalidf("trace.max_reduces", t.MaxReduces, "must be an integer in [1, %d]", models.MaxReducesLimit)
	}
	switch t.Work {
	case "":
		t.Work = WorkExponential
	case WorkExponential, WorkInputBytes, WorkShuffleBytes:
	default:
		return invalidf("trace.work", t.Work, "must be %q, %q or %q", WorkExponential, WorkInputBytes, WorkShuffleBytes)
	}
	if t.TimeScale != nil && t.Load != nil {
		return invalidf("trace.load", *t.Load, "give either load or time_scale, not both")
	}
	if t.TimeScale != nil && (math.IsNaN(*t.TimeScale) || math.IsInf(*t.TimeScale, 0) || *t.TimeScale <= 0) {
		return invalidf("trace.time_scale", *t.TimeScale, "must be a finite number > 0")
	}
	if t.Load != nil && (math.IsNaN(*t.Load) || math.IsInf(*t.Load, 0) || *t.Load <= 0) {
		return invalidf("trace.load", *t.Load, "must be a finite number > 0")
	}
	if math.IsNaN(t.BytesPerReduce) || math.IsInf(t.BytesPerReduce, 0) || t.BytesPerReduce < 0 {
		return invalidf("trace.bytes_per_reduce", t.BytesPerReduce, "must be a finite number ≥ 0 (0: %d)", int64(trace.DefaultBytesPerReduce))
	}
	path := t.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(baseDir, path)
	}
	jobs, err := trace.ReadFile(path, trace.Options{BytesPerReduce: t.BytesPerReduce})
	if err != nil {
		return &ScenarioError{Field: "trace.file", Value: t.File, Reason: err.Error()}
	}
	var used []trace.Job
	for _, tj := range jobs {
		if tj.Reduces >= 1 && tj.ShuffleBytes > 0 {
			used = append(used, tj)
		}
	}
	if j.Jobs != nil {
		if n := *j.Jobs; n < 1 || n > len(used) {
			return invalidf("jobs", n, "must be an integer in [1, %d] (the trace's jobs with a shuffle)", len(used))
		}
		used = used[:*j.Jobs]
	}
	if len(used) < 2 {
		return invalidf("trace.file", t.File, "has %d jobs with a shuffle, need at least 2", len(used))
	}
	first, span := used[0].SubmitS, used[len(used)-1].SubmitS-used[0].SubmitS
	if span <= 0 {
		return invalidf("trace.file", t.File, "all jobs arrive at the same time")
	}
	s.trace = make([]traceJob, len(used))
	var sumBytes float64
	for i, tj := range used {
		b := 0.0
		switch t.Work {
		case WorkInputBytes:
			b = tj.InputBytes
		case WorkShuffleBytes:
			b = tj.ShuffleBytes
		}
		sumBytes += b
		s.trace[i] = traceJob{arrival: tj.SubmitS - first, x: tj.ShuffleBytes / trace.MiB, r: min(tj.Reduces, t.MaxReduces), work: b}
	}
	if t.Work != WorkExponential {
		if sumBytes <= 0 {
			return invalidf("trace.work", t.Work, "the trace records no such bytes for its jobs")
		}
		mean := sumBytes / float64(len(used))
		for i := range s.trace {
			s.trace[i].work = s.trace[i].work / mean / s.ServiceRate
		}
	}
	scale := 1.0
	if t.TimeScale != nil {
		scale = *t.TimeScale
	}
	n := float64(len(used))
	if t.Load != nil {
		// Offered load = (n/μ)/(span·scale).
		scale = n / s.ServiceRate / (span * *t.Load)
	}
	for i := range s.trace {
		s.trace[i].arrival *= scale
	}
	s.ArrivalRate = (n - 1) / (span * scale)
	obs := make([]thresholds.Observation, len(s.trace))
	for i, tj := range s.trace {
		obs[i] = thresholds.Observation{Data: tj.x, Reduces: tj.r}
	}
	if s.Workload, err = thresholds.EmpiricalWorkload(obs); err != nil {
		return &ScenarioError{Field: "trace.file", Value: t.File, Reason: err.Error()}
	}
	s.Jobs = len(used)
	s.Trace = &t
	return nil
}

// traceSource replays a trace scenario's jobs; exponential works come from
// the replication's StreamWorks.
type traceSource struct {
	jobs []traceJob
	i    int
	mu   float64
	work *rand.Rand // nil unless WorkExponential
}

func newTraceSource(s *Scenario, seed uint64) *traceSource {
	src := &traceSource{jobs: s.trace, mu: s.ServiceRate}
	if s.Trace.Work == WorkExponential {
		src.work = NewRand(seed, StreamWorks)
	}
	return src
}

func (t *traceSource) Next() (JobSpec, bool) {
	if t.i >= len(t.jobs) {
		return JobSpec{}, false
	}
	j := t.jobs[t.i]
	t.i++
	b := j.work
	if t.work != nil {
		b = t.work.ExpFloat64() / t.mu
	}
	return JobSpec{Arrival: j.arrival, Work: b, X: j.x, R: j.r}, true
}

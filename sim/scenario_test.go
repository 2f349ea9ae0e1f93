package sim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/models"
)

const validScenario = `{
  "slots": {"costs": [1, 5, 9, 2]},
  "max_jobs_in_service": 2,
  "arrival_rate": 0.6, "service_rate": 1.0,
  "max_waiting": null,
  "workload": {"data": {"kind": "uniform", "min": 1, "max": 100},
               "reduces": {"kind": "uniform-int", "min": 1, "max": 2}},
  "jobs": 100, "warmup_jobs": 10, "replications": 3, "seed": 1 }`

func TestDecodeScenarioValid(t *testing.T) {
	s, err := DecodeScenario([]byte(validScenario), ".")
	if err != nil {
		t.Fatal(err)
	}
	if s.K != 2 || s.ArrivalRate != 0.6 || s.MaxWaiting != -1 || s.Jobs != 100 || s.WarmupJobs != 10 ||
		s.Replications != 3 || s.Seed != 1 || !s.SlotsExplicit || len(s.SlotCosts) != 4 || s.MaxReduces() != 2 {
		t.Errorf("decoded %+v", s)
	}
}

func TestDecodeScenarioDrawnSlots(t *testing.T) {
	doc := strings.Replace(validScenario, `{"costs": [1, 5, 9, 2]}`, `{"count": 50, "cost": {"kind": "uniform", "min": 1, "max": 100}}`, 1)
	a, err := DecodeScenario([]byte(doc), ".")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := DecodeScenario([]byte(doc), ".")
	if len(a.SlotCosts) != 50 || a.SlotsExplicit {
		t.Fatalf("slots %v", a.SlotCosts)
	}
	for i, c := range a.SlotCosts {
		if c < 1 || c > 100 || c != b.SlotCosts[i] {
			t.Fatalf("slot %d cost %v (second decode %v): want in [1, 100] and reproducible", i, c, b.SlotCosts[i])
		}
	}
}

// TestDecodeScenarioErrors: each error names the field (and value).
func TestDecodeScenarioErrors(t *testing.T) {
	for _, c := range []struct {
		name, from, to, want string
	}{
		{"unknown", `"seed": 1`, `"seed": 1, "sed": 2`, `sed: unknown field`},
		{"unknown-slots", `{"costs": [1, 5, 9, 2]}`, `{"costs": [1, 5, 9, 2], "x": 1}`, `slots.x: unknown field`},
		{"k-missing", `"max_jobs_in_service": 2,`, ``, `max_jobs_in_service: missing`},
		{"k-zero", `"max_jobs_in_service": 2`, `"max_jobs_in_service": 0`, `max_jobs_in_service = 0`},
		{"k-float", `"max_jobs_in_service": 2`, `"max_jobs_in_service": 2.5`, `max_jobs_in_service = 2.5: must be an integer`},
		{"rate", `"arrival_rate": 0.6`, `"arrival_rate": -1`, `arrival_rate = -1`},
		{"unstable", `"arrival_rate": 0.6`, `"arrival_rate": 1.5`, `arrival_rate = 1.5: the queue is unstable`},
		{"service", `"service_rate": 1.0`, `"service_rate": 0`, `service_rate = 0`},
		{"wait", `"max_waiting": null`, `"max_waiting": -2`, `max_waiting = -2`},
		{"slots-few", `[1, 5, 9, 2]`, `[1, 5, 9]`, `slots = 3: need at least max_jobs_in_service·max_reduces = 2·2 = 4`},
		{"slot-neg", `[1, 5, 9, 2]`, `[1, 5, -9, 2]`, `slots.costs[2] = -9`},
		{"slots-both", `{"costs": [1, 5, 9, 2]}`, `{"costs": [1], "count": 4}`, `slots.costs: must not be given together`},
		{"slots-law", `{"costs": [1, 5, 9, 2]}`, `{"count": 4, "cost": {"kind": "uniform", "min": 5, "max": 1}}`, `slots.cost.max`},
		{"workload", `"max": 100}`, `"max": 100, "mean": 3}`, `workload.data`},
		{"jobs", `"jobs": 100`, `"jobs": 0`, `jobs = 0`},
		{"warmup", `"warmup_jobs": 10`, `"warmup_jobs": 100`, `warmup_jobs = 100`},
		{"reps", `"replications": 3`, `"replications": 0`, `replications = 0`},
		{"seed", `"seed": 1`, `"seed": -1`, `seed = -1: must be a non-negative integer`},
		{"trailing", `"seed": 1 }`, `"seed": 1 } {}`, `trailing data after the JSON object`},
		{"trace-and-rate", `"seed": 1`, `"seed": 1, "trace": {"file": "x", "max_reduces": 1}`, `arrival_rate = 0.6: not allowed with a trace`},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.Replace(validScenario, c.from, c.to, 1)
			if doc == validScenario {
				t.Fatalf("replacement %q not found", c.from)
			}
			_, err := DecodeScenario([]byte(doc), ".")
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if !errors.Is(err, ErrInvalidScenario) && !errors.Is(err, models.ErrInvalidWorkload) {
				t.Errorf("error %v wraps neither sentinel", err)
			}
		})
	}
}

func TestTraceScenarios(t *testing.T) {
	data := testenv.TraceData(t)
	for _, c := range []struct {
		name, file, extra string
		minJobs           int
	}{
		{"swim-2009", "swim/FB-2009_samples_24_times_1hr_0.tsv", `"work": "input-bytes"`, 1000},
		{"swim-2010", "swim/FB-2010_samples_24_times_1hr_0.tsv", `"work": "exponential"`, 10000},
		{"coflow", "coflow/FB2010-1Hr-150-0.txt", `"work": "shuffle-bytes"`, 500},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(data, c.file)
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s absent: %v", path, err)
			}
			doc := `{"slots": {"count": 200, "cost": {"kind": "uniform", "min": 1, "max": 100}},
			  "max_jobs_in_service": 20, "service_rate": 1, "replications": 2, "seed": 3,
			  "trace": {"file": "` + path + `", "max_reduces": 10, "load": 0.5, ` + c.extra + `}}`
			s, err := DecodeScenario([]byte(doc), ".")
			if err != nil {
				t.Fatal(err)
			}
			if s.Jobs < c.minJobs || s.MaxReduces() != 10 || s.Workload.MaxReduces() > 10 {
				t.Fatalf("jobs %d, max R %d", s.Jobs, s.Workload.MaxReduces())
			}
			r, err := s.RunReplication(t.Context(), 0, allPolicies()[:2], true)
			if err != nil {
				t.Fatal(err)
			}
			res := r.Results[allPolicies()[0].Name]
			if res.Arrived != s.Jobs || res.Entered != s.Jobs || len(r.Records) != s.Jobs {
				t.Errorf("arrived %d, entered %d, records %d, want %d", res.Arrived, res.Entered, len(r.Records), s.Jobs)
			}
			// Offered load 0.5: the busy fraction of a work-conserving
			// queue is the load.
			var work float64
			src := s.Source(0)
			for {
				j, ok := src.Next()
				if !ok {
					break
				}
				work += j.Work
			}
			span := r.Records[len(r.Records)-1].Arrival
			if load := work / span; load < 0.4 || load > 0.6 {
				t.Errorf("offered load %v, want about 0.5", load)
			}
			for _, rec := range r.Records {
				if !(rec.Start >= rec.Arrival && rec.End >= rec.Start) || rec.R < 1 || rec.R > 10 {
					t.Fatalf("record %+v", rec)
				}
			}
		})
	}
}

func TestTraceScenarioErrors(t *testing.T) {
	path := testenv.TraceFile(t, "coflow/FB2010-1Hr-150-0.txt")
	base := `{"slots": {"count": 200, "cost": {"kind": "uniform", "min": 1, "max": 100}},
	  "max_jobs_in_service": 20, "service_rate": 1, "trace": {"file": "` + path + `", "max_reduces": 10 %s}}`
	for _, c := range []struct{ extra, want string }{
		{`, "work": "input-bytes"`, `trace.work = input-bytes: the trace records no such bytes`},
		{`, "work": "magic"`, `trace.work = magic`},
		{`, "load": 0.5, "time_scale": 2`, `trace.load = 0.5: give either`},
		{`, "load": 0`, `trace.load = 0`},
		{`, "extra": 1`, `trace.extra: unknown field`},
	} {
		_, err := DecodeScenario([]byte(strings.Replace(base, "%s", c.extra, 1)), ".")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.extra, err, c.want)
		}
	}
	_, err := DecodeScenario([]byte(strings.Replace(strings.Replace(base, "%s", "", 1), path, "/nonexistent/trace.txt", 1)), ".")
	if err == nil || !strings.Contains(err.Error(), "trace.file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestFig9ScenarioFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/fig9-rho*.json")
	if err != nil || len(files) != 5 {
		t.Fatalf("fig9 scenarios: %v %v", files, err)
	}
	for _, f := range files {
		s, err := LoadScenario(f)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.SlotCosts) != 1000 || s.K*s.MaxReduces() != 1000 || s.Jobs != 50000 || s.ServiceRate != 1 {
			t.Errorf("%s: %d slots, K = %d, max R = %d, jobs %d", f, len(s.SlotCosts), s.K, s.MaxReduces(), s.Jobs)
		}
	}
}

func FuzzDecodeScenario(f *testing.F) {
	f.Add([]byte(validScenario))
	f.Add([]byte(strings.Replace(validScenario, `{"costs": [1, 5, 9, 2]}`, `{"count": 5, "cost": {"kind": "exponential", "mean": 2}}`, 1)))
	f.Add([]byte(`{"slots": {"costs": [1]}, "max_jobs_in_service": 1, "service_rate": 1, "trace": {"file": "x", "max_reduces": 1}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"slots": null, "max_waiting": 3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeScenario(data, t.TempDir())
		if err != nil {
			if !errors.Is(err, ErrInvalidScenario) && !errors.Is(err, models.ErrInvalidWorkload) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		if s.K < 1 || len(s.SlotCosts) < s.K*s.MaxReduces() || s.Jobs < 1 || s.WarmupJobs >= s.Jobs || s.Replications < 1 {
			t.Fatalf("accepted an invalid scenario: %+v", s)
		}
	})
}

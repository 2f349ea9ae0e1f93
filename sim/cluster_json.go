package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/optd/optd/models"
	"github.com/optd/optd/models/trace"
)

// MaxClusterScenarioBytes bounds a scenario file.
const MaxClusterScenarioBytes = 64 << 20

// clusterJSON is the wire form of a ClusterScenario:
//
//	{ "name": "mine", "seed": 1,
//	  "cluster": {"resources": ["memory_mb", "vcores"],
//	              "nodes": [{"id": "n1", "rack": "r1", "capacity": [8192, 8],
//	                         "map_slots": 0, "reduce_slots": 0}]},
//	  "heartbeat_s": 1, "slow_start": 0.05, "reduce_ramp": true,
//	  "replicas": 3, "rack_local_penalty": 0.1, "off_rack_penalty": 0.3,
//	  "sample_s": 1, "stragglers": [{"node": "n1", "speed": 0.5}],
//	  "network": {"node_mbps": 125, "oversubscription": 4, "rack_oversubscription": {"r2": 1}},
//	  "jobs": [{"id": "j1", "submit_s": 0, "queue": "", "weight": 1,
//	            "stages": 1, "maps": 10, "reduces": 2,
//	            "demand": {"map": [1024, 1], "reduce": [2048, 1]},
//	            "map_work": {"kind": "uniform", "min": 20, "max": 30},
//	            "reduce_work": {"kind": "exponential", "mean": 40},
//	            "map_works": [...], "reduce_works": [...],
//	            "shuffle_fraction": 0.33, "parallel_fraction": 0.5,
//	            "map_skew": {"fraction": 0.05, "factor": 3}, "reduce_skew": {...},
//	            "map_output_mb": 128}],
//	  "trace": {"file": "data/hadoop-mumak/19-jobs.attempts.csv",
//	            "max_jobs": 10, "demand": {...}, "map_work": {...}, "reduce_work": {...}} }
//
// Work laws are docs/formats.md#workload data laws (in reference seconds). With
// "trace", the jobs come from the trace file (any format trace.ReadFile
// reads, path relative to the scenario file): submit times and task counts
// from the trace; the works of a Mumak/Rumen trace are the durations of the
// successful attempts, otherwise drawn from the trace's map_work and
// reduce_work laws; every job gets the trace's demand. "jobs" and "trace"
// may be combined. "network" turns the shuffle network on (see Network);
// a trace job's map output is then its shuffle bytes over its maps where
// the trace records them.
type clusterJSON struct {
	Name             string          `json:"name"`
	Seed             uint64          `json:"seed"`
	Cluster          *models.Cluster `json:"cluster"`
	HeartbeatS       float64         `json:"heartbeat_s"`
	SlowStart        float64         `json:"slow_start"`
	ReduceRamp       bool            `json:"reduce_ramp"`
	Replicas         int             `json:"replicas"`
	RackLocalPenalty float64         `json:"rack_local_penalty"`
	OffRackPenalty   float64         `json:"off_rack_penalty"`
	SampleS          float64         `json:"sample_s"`
	Stragglers       []struct {
		Node  string  `json:"node"`
		Speed float64 `json:"speed"`
	} `json:"stragglers"`
	Jobs          []clusterJobJSON  `json:"jobs"`
	Trace         *clusterTraceJSON `json:"trace"`
	MaxEvents     uint64            `json:"max_events"`
	MaxSimulatedS float64           `json:"max_simulated_s"`
	Network       *struct {
		NodeMBps             float64            `json:"node_mbps"`
		Oversubscription     float64            `json:"oversubscription"`
		RackOversubscription map[string]float64 `json:"rack_oversubscription"`
	} `json:"network"`
}

type clusterJobJSON struct {
	ID               string                               `json:"id"`
	SubmitS          float64                              `json:"submit_s"`
	Queue            string                               `json:"queue"`
	Weight           float64                              `json:"weight"`
	Stages           int                                  `json:"stages"`
	Maps             int                                  `json:"maps"`
	Reduces          int                                  `json:"reduces"`
	Demand           map[models.TaskType]models.Resources `json:"demand"`
	MapWork          json.RawMessage                      `json:"map_work"`
	ReduceWork       json.RawMessage                      `json:"reduce_work"`
	MapWorks         []float64                            `json:"map_works"`
	ReduceWorks      []float64                            `json:"reduce_works"`
	ShuffleFraction  float64                              `json:"shuffle_fraction"`
	ParallelFraction float64                              `json:"parallel_fraction"`
	MapSkew          Skew                                 `json:"map_skew"`
	ReduceSkew       Skew                                 `json:"reduce_skew"`
	MapOutputMB      float64                              `json:"map_output_mb"`
	InputRacks       []string                             `json:"input_racks"`
}

type clusterTraceJSON struct {
	File       string                               `json:"file"`
	MaxJobs    int                                  `json:"max_jobs"`
	Demand     map[models.TaskType]models.Resources `json:"demand"`
	MapWork    json.RawMessage                      `json:"map_work"`
	ReduceWork json.RawMessage                      `json:"reduce_work"`
}

// UnmarshalJSON decodes a skew strictly.
func (s *Skew) UnmarshalJSON(b []byte) error {
	var w struct {
		Fraction float64 `json:"fraction"`
		Factor   float64 `json:"factor"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return err
	}
	s.Fraction, s.Factor = w.Fraction, w.Factor
	return nil
}

// LoadClusterScenario reads a scenario file (see DecodeClusterScenario).
func LoadClusterScenario(path string) (*ClusterScenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidScenario, err)
	}
	defer f.Close()
	sc, err := DecodeClusterScenario(f, filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sc, nil
}

// DecodeClusterScenario reads one JSON scenario strictly (unknown fields,
// trailing data and more than MaxClusterScenarioBytes are errors), resolves
// trace and empirical files against baseDir, and validates it. Errors wrap
// ErrInvalidScenario and name the field.
func DecodeClusterScenario(r io.Reader, baseDir string) (*ClusterScenario, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxClusterScenarioBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read: %v", ErrInvalidScenario, err)
	}
	if len(data) > MaxClusterScenarioBytes {
		return nil, invalidf("", nil, "larger than %d bytes", MaxClusterScenarioBytes)
	}
	var w clusterJSON
	if err := strictDecode(data, "", &w); err != nil {
		return nil, err
	}
	if w.Cluster == nil {
		return nil, invalidf("cluster", nil, "missing")
	}
	sc := &ClusterScenario{Name: w.Name, Seed: w.Seed, Cluster: *w.Cluster, HeartbeatS: w.HeartbeatS, SlowStart: w.SlowStart,
		ReduceRamp: w.ReduceRamp, Replicas: w.Replicas, RackLocalPenalty: w.RackLocalPenalty, OffRackPenalty: w.OffRackPenalty, SampleS: w.SampleS,
		MaxEvents: w.MaxEvents, MaxSimulatedS: w.MaxSimulatedS}
	if sc.Name == "" {
		sc.Name = "scenario"
	}
	if w.Network != nil {
		sc.Network = &Network{NodeMBps: w.Network.NodeMBps, Oversubscription: w.Network.Oversubscription,
			RackOversubscription: w.Network.RackOversubscription}
	}
	for _, s := range w.Stragglers {
		sc.Stragglers = append(sc.Stragglers, Straggler{Node: s.Node, Speed: s.Speed})
	}
	for i, j := range w.Jobs {
		path := fmt.Sprintf("jobs[%d]", i)
		cj := ClusterJob{ID: j.ID, SubmitS: j.SubmitS, Queue: j.Queue, Weight: j.Weight, Stages: j.Stages, Maps: j.Maps, Reduces: j.Reduces,
			Demand: j.Demand, MapWorks: j.MapWorks, ReduceWorks: j.ReduceWorks, ShuffleFraction: j.ShuffleFraction,
			ParallelFraction: j.ParallelFraction, MapSkew: j.MapSkew, ReduceSkew: j.ReduceSkew, MapOutputMB: j.MapOutputMB,
			InputRacks: j.InputRacks}
		if cj.MapWork, err = optionalDist(j.MapWork, baseDir, path+".map_work"); err != nil {
			return nil, err
		}
		if cj.ReduceWork, err = optionalDist(j.ReduceWork, baseDir, path+".reduce_work"); err != nil {
			return nil, err
		}
		sc.Jobs = append(sc.Jobs, cj)
	}
	if w.Trace != nil {
		if err := sc.addTrace(w.Trace, baseDir); err != nil {
			return nil, err
		}
	}
	if err := sc.withDefaults().Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

func optionalDist(raw json.RawMessage, baseDir, field string) (models.Dist, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	d, err := models.DecodeDist(raw, baseDir, field)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidScenario, err)
	}
	return d, nil
}

// addTrace appends the jobs of a trace file.
func (sc *ClusterScenario) addTrace(t *clusterTraceJSON, baseDir string) error {
	if t.File == "" {
		return invalidf("trace.file", nil, "missing")
	}
	if t.MaxJobs < 0 {
		return invalidf("trace.max_jobs", t.MaxJobs, "negative (0: all)")
	}
	file := t.File
	if !filepath.IsAbs(file) {
		file = filepath.Join(baseDir, file)
	}
	jobs, err := trace.ReadFile(file, trace.Options{})
	if err != nil {
		return invalidf("trace.file", t.File, "%v", err)
	}
	mapLaw, err := optionalDist(t.MapWork, baseDir, "trace.map_work")
	if err != nil {
		return err
	}
	redLaw, err := optionalDist(t.ReduceWork, baseDir, "trace.reduce_work")
	if err != nil {
		return err
	}
	if t.MaxJobs > 0 && len(jobs) > t.MaxJobs {
		jobs = jobs[:t.MaxJobs]
	}
	for _, tj := range jobs {
		cj := ClusterJob{ID: tj.ID, SubmitS: tj.SubmitS, Maps: tj.Maps, Reduces: tj.Reduces, Demand: t.Demand, MapWork: mapLaw, ReduceWork: redLaw}
		if tj.ShuffleBytes > 0 && tj.Maps > 0 {
			cj.MapOutputMB = tj.ShuffleBytes / (1 << 20) / float64(tj.Maps)
		}
		if len(tj.Attempts) > 0 {
			mw, rw := AttemptWorks(tj.Attempts)
			if len(mw) == tj.Maps && len(mw) > 0 {
				cj.MapWorks = mw
			}
			if len(rw) == tj.Reduces && len(rw) > 0 {
				cj.ReduceWorks = rw
			}
		}
		if cj.Maps+cj.Reduces == 0 {
			continue
		}
		sc.Jobs = append(sc.Jobs, cj)
	}
	if len(sc.Jobs) == 0 {
		return invalidf("trace.file", t.File, "no job with tasks")
	}
	return nil
}

// AttemptWorks returns the durations in seconds of the successful map and
// reduce attempts of a trace job (at least 1 ms), in trace order: the task
// works a "trace" scenario takes from a Mumak/Rumen trace.
func AttemptWorks(as []trace.Attempt) (maps, reduces []float64) {
	for _, a := range as {
		if a.Result != trace.ResultSuccess || a.StartMs < 0 || a.FinishMs < a.StartMs {
			continue
		}
		d := max(float64(a.FinishMs-a.StartMs)/1000, 1e-3)
		switch a.Type {
		case trace.TaskMap:
			maps = append(maps, d)
		case trace.TaskReduce:
			reduces = append(reduces, d)
		}
	}
	return maps, reduces
}

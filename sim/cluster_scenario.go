package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/optd/optd/models"
)

// ClusterScenario is a heartbeat-scheduling experiment (docs/formats.md#cluster-scenario): a
// cluster of nodes (resource vectors, MRv1 typed slots or both) in racks,
// and a batch or stream of MapReduce jobs. It is plain data; RunCluster
// simulates it under a policy.Pipeline (or a ControlPlane). Build one with the built-in
// constructors (BuiltinCluster), DecodeClusterScenario (JSON) or by hand,
// and call Validate (the simulator does).
//
// The model, and the choices the papers leave open:
//
//   - Heartbeats: node i heartbeats at times i·HeartbeatS/n + k·HeartbeatS
//     (staggered, as NodeManagers/TaskTrackers are); tasks start only at
//     their node's heartbeat.
//   - Work: every task has a work w in reference seconds, its duration when
//     it runs on a node of speed 1 with exactly its requested resources and
//     node-local (or no) input. A map reading a rack-local block takes
//     (1 + RackLocalPenalty)·w, an off-rack block (1 + OffRackPenalty)·w.
//   - Speed (the model stealing and DynamicAdjust act on): an attempt
//     granted g vcores for a request of r progresses at rate
//     speed(node)·1/((1−p) + p·r/g), Amdahl's law with the job's parallel
//     fraction p (ParallelFraction): rate 1 at g = r, more with stolen
//     cores, less when DynamicAdjust takes cores away, never more than
//     1/(1−p). Memory does not change speed (a granted amount below the
//     request would fail a real task; policies never do that). On a
//     cluster without a vcores dimension the rate is the node speed.
//   - Reduces: without a Network, the first ShuffleFraction of a reduce's
//     work is its shuffle (copy) phase, which cannot end before every map of the stage has
//     finished; a reducer that reaches that point waits, holding its
//     resources. The rest is split evenly between sort and reduce.
//     Reduces become schedulable once SlowStart of the stage's maps are
//     done; with ReduceRamp (YARN's MapReduce ApplicationMaster, the "Ideal
//     Reduce Memory Limit" HaSTE §3.4.2 describes) at most
//     ⌈R·(maps done/maps)⌉ reduces are requested at a time until the maps
//     finish. With a Network, the shuffle is the reducer's fetches of the
//     map outputs over the network instead (see Network).
//   - Multi-stage jobs: a job of Stages stages (iterations) runs them one
//     after the other; each stage has Maps maps and Reduces reduces and
//     starts when the previous one has finished.
//   - Input: each map's block has min(Replicas, nodes) replicas on distinct
//     nodes drawn uniformly (stream StreamLocality of the seed).
//   - Skew: a fraction of a job's tasks (chosen at random) has its work
//     multiplied by Skew.Factor; straggler nodes run at Speed < 1.
type ClusterScenario struct {
	Name    string
	Cluster models.Cluster
	// HeartbeatS is the heartbeat interval of every node (0: 1 s, YARN's
	// NodeManager default; MRv1 scenarios use 3 s).
	HeartbeatS float64
	// SlowStart is the fraction of a stage's maps that must be done before
	// its reduces may start (0: 0.05, Hadoop's
	// mapreduce.job.reduce.slowstart.completedmaps). 1 means after all maps.
	SlowStart float64
	// ReduceRamp limits requested reduces to the map progress (YARN MR AM).
	ReduceRamp bool
	// Replicas per input block (0: 3, HDFS's default).
	Replicas int
	// RackLocalPenalty and OffRackPenalty are the extra work of a map
	// reading its block from another node of its rack / another rack
	// (0 and 0: 0.1 and 0.3; a negative value means none).
	RackLocalPenalty, OffRackPenalty float64
	// Stragglers slow nodes down.
	Stragglers []Straggler
	// SampleS is the interval of the utilization time series and of the
	// fairness samples (0: HeartbeatS).
	SampleS float64
	Jobs    []ClusterJob
	// Network, if set, models the shuffle over the cluster's links (see
	// Network); nil keeps the shuffle as compute work.
	Network *Network
	// Seed is the scenario's default seed (replicas, works, skew).
	Seed uint64
	// MaxEvents and MaxSimulatedS stop a run that has processed that many
	// events, or whose clock has passed that many seconds, with an error
	// (ErrRunLimit) naming the limit (0: DefaultMaxEvents,
	// DefaultMaxSimulatedS): a scenario whose values are valid one by one
	// can still ask for a run that never ends in practice (a link of a
	// few bytes per second, a task of 10³⁰⁰ s, while every node
	// heartbeats each second).
	MaxEvents     uint64
	MaxSimulatedS float64
}

// Straggler is a node that runs at Speed (0 < Speed ≤ 1) of a normal node.
type Straggler struct {
	Node  string
	Speed float64
}

// ClusterJob is one job of a cluster scenario. Counts are per stage.
type ClusterJob struct {
	ID      string
	SubmitS float64
	Queue   string
	// Weight is the fair-share weight (0: 1).
	Weight float64
	// Stages is the number of stages or iterations (0: 1).
	Stages  int
	Maps    int
	Reduces int
	// Demand is the per-task request of each type, over the cluster's
	// resource names (absent: nothing but a slot).
	Demand map[models.TaskType]models.Resources
	// MapWork and ReduceWork are the laws of a task's work in reference
	// seconds (see ClusterScenario). MapWorks/ReduceWorks, when set, list
	// the works of the tasks of every stage in order (a trace) and
	// override the laws.
	MapWork, ReduceWork   models.Dist
	MapWorks, ReduceWorks []float64
	// ShuffleFraction of a reduce's work is its shuffle phase (0: 1/3,
	// Hadoop's progress weights).
	ShuffleFraction float64
	// ParallelFraction is p of the speed model (0: 0.5).
	ParallelFraction float64
	// MapSkew and ReduceSkew make some tasks heavier.
	MapSkew, ReduceSkew Skew
	// MapOutputMB is the output of one map, which the reducers fetch over
	// the scenario's Network (0: DefaultMapOutputMB, a Sort's block; unused
	// without a Network).
	MapOutputMB float64
	// InputRacks, if set, hold the job's input: map i's block replicas
	// are drawn among the nodes of rack InputRacks[i mod len] (the
	// Coflow trace's rack-level mappers); unset, among all nodes.
	InputRacks []string
}

// Skew multiplies the work of a Fraction of a job's tasks of one type
// (chosen at random per stage) by Factor ≥ 1.
type Skew struct {
	Fraction, Factor float64
}

// Defaults of the cluster model.
const (
	DefaultHeartbeatS       = 1.0
	DefaultSlowStart        = 0.05
	DefaultReplicas         = 3
	DefaultRackLocalPenalty = 0.1
	DefaultOffRackPenalty   = 0.3
	DefaultShuffleFraction  = 1.0 / 3
	DefaultParallelFraction = 0.5
	// MaxClusterTasks bounds the tasks of a scenario (all stages).
	MaxClusterTasks = 1 << 22
	// DefaultMaxEvents is 4 times the events of the largest trace replay
	// optd runs (SWIM FB-2009 at its 600 nodes over a day of 1 s
	// heartbeats, about 5·10⁷ events): some ten minutes of simulation on
	// one core.
	DefaultMaxEvents = 200_000_000
	// DefaultMaxSimulatedS is about 116 days of simulated time, four times
	// the longest public cluster trace (Google's 29 days).
	DefaultMaxSimulatedS = 1e7
	// MinHeartbeatS and MaxHeartbeatS bound heartbeat_s and sample_s (when
	// set): below 10 ms every node heartbeats faster than any scheduler
	// does and a run's events grow without bound.
	MinHeartbeatS = 0.01
	MaxHeartbeatS = 86400
)

// withDefaults returns a copy with zero fields set to their defaults.
func (s *ClusterScenario) withDefaults() *ClusterScenario {
	c := *s
	if c.HeartbeatS == 0 {
		c.HeartbeatS = DefaultHeartbeatS
	}
	if c.SlowStart == 0 {
		c.SlowStart = DefaultSlowStart
	}
	if c.Replicas == 0 {
		c.Replicas = DefaultReplicas
	}
	c.RackLocalPenalty = penalty(c.RackLocalPenalty, DefaultRackLocalPenalty)
	c.OffRackPenalty = penalty(c.OffRackPenalty, DefaultOffRackPenalty)
	if c.SampleS == 0 {
		c.SampleS = c.HeartbeatS
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = DefaultMaxEvents
	}
	if c.MaxSimulatedS == 0 {
		c.MaxSimulatedS = DefaultMaxSimulatedS
	}
	c.Jobs = slices.Clone(s.Jobs)
	c.Network = s.Network.withDefaults()
	for i := range c.Jobs {
		j := &c.Jobs[i]
		if j.MapOutputMB == 0 {
			j.MapOutputMB = DefaultMapOutputMB
		}
		if j.Weight == 0 {
			j.Weight = 1
		}
		if j.Stages == 0 {
			j.Stages = 1
		}
		if j.ShuffleFraction == 0 {
			j.ShuffleFraction = DefaultShuffleFraction
		}
		if j.ParallelFraction == 0 {
			j.ParallelFraction = DefaultParallelFraction
		}
	}
	return &c
}

func penalty(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Validate checks the scenario: a valid cluster; positive finite intervals;
// slow-start in [0, 1]; stragglers on known nodes with speed in (0, 1]; at
// least one job; distinct job IDs; non-negative counts with at least one
// task; demands over the cluster's resources that fit on some node (and
// typed slots for a slot cluster); a work law or list for every task type
// used; fractions in range. Errors wrap ErrInvalidScenario and name the
// field.
func (s *ClusterScenario) Validate() error {
	if err := s.Cluster.Validate(); err != nil {
		// The cluster's error names the field within the cluster
		// ("nodes[0].capacity[1] = -4: ..."): put it under "cluster.".
		return invalidf("", nil, "cluster.%s", strings.TrimPrefix(err.Error(), models.ErrInvalidCluster.Error()+": "))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"heartbeat_s", s.HeartbeatS}, {"sample_s", s.SampleS}, {"rack_local_penalty", s.RackLocalPenalty}, {"off_rack_penalty", s.OffRackPenalty}, {"max_simulated_s", s.MaxSimulatedS}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || (f.name != "rack_local_penalty" && f.name != "off_rack_penalty" && f.v < 0) {
			return invalidf(f.name, f.v, "must be a finite number ≥ 0 (0: default)")
		}
		if (f.name == "heartbeat_s" || f.name == "sample_s") && f.v != 0 && (f.v < MinHeartbeatS || f.v > MaxHeartbeatS) {
			return invalidf(f.name, f.v, "must be 0 (default) or in [%g, %g] s", MinHeartbeatS, float64(MaxHeartbeatS))
		}
	}
	if !(s.SlowStart >= 0 && s.SlowStart <= 1) {
		return invalidf("slow_start", s.SlowStart, "must be in [0, 1]")
	}
	if s.Replicas < 0 {
		return invalidf("replicas", s.Replicas, "negative")
	}
	nodes, racks := map[string]bool{}, map[string]bool{}
	slotCluster := false
	for _, n := range s.Cluster.Nodes {
		nodes[n.ID], racks[n.Rack] = true, true
		slotCluster = slotCluster || n.MapSlots+n.ReduceSlots > 0
	}
	if err := s.Network.validate(racks); err != nil {
		return err
	}
	for i, st := range s.Stragglers {
		if !nodes[st.Node] {
			return invalidf(fmt.Sprintf("stragglers[%d].node", i), st.Node, "unknown node")
		}
		if !(st.Speed > 0 && st.Speed <= 1) {
			return invalidf(fmt.Sprintf("stragglers[%d].speed", i), st.Speed, "must be in (0, 1]")
		}
	}
	if len(s.Jobs) == 0 {
		return invalidf("jobs", "[]", "a scenario needs at least one job")
	}
	ids := map[string]int{}
	total := 0
	for i := range s.Jobs {
		j := &s.Jobs[i]
		path := fmt.Sprintf("jobs[%d]", i)
		if err := s.validateJob(j, path, slotCluster); err != nil {
			return err
		}
		if first, dup := ids[j.ID]; dup {
			return invalidf(path+".id", j.ID, "duplicate job id (also jobs[%d])", first)
		}
		ids[j.ID] = i
		total += max(j.Stages, 1) * (j.Maps + j.Reduces)
		if total > MaxClusterTasks {
			return invalidf(path, j.ID, "the scenario has more than %d tasks", MaxClusterTasks)
		}
	}
	return nil
}

// maxSimulatedS is MaxSimulatedS or its default.
func (s *ClusterScenario) maxSimulatedS() float64 {
	if s.MaxSimulatedS == 0 {
		return DefaultMaxSimulatedS
	}
	return s.MaxSimulatedS
}

func (s *ClusterScenario) validateJob(j *ClusterJob, path string, slotCluster bool) error {
	stages := max(j.Stages, 1)
	switch {
	case j.ID == "":
		return invalidf(path+".id", j.ID, "empty")
	case math.IsNaN(j.SubmitS) || math.IsInf(j.SubmitS, 0) || j.SubmitS < 0:
		return invalidf(path+".submit_s", j.SubmitS, "must be a finite number ≥ 0")
	case j.SubmitS > s.maxSimulatedS():
		return invalidf(path+".submit_s", j.SubmitS, "after max_simulated_s = %g s, where the run stops", s.maxSimulatedS())
	case j.Stages < 0 || j.Stages > 1<<16:
		return invalidf(path+".stages", j.Stages, "must be in [1, 65536] (0 or absent: 1)")
	case j.Maps < 0 || j.Reduces < 0:
		return invalidf(path+".maps", j.Maps, "maps = %d, reduces = %d: negative", j.Maps, j.Reduces)
	case j.Maps+j.Reduces == 0:
		return invalidf(path+".maps", j.Maps, "job %q has no task", j.ID)
	case j.Maps > MaxClusterTasks || j.Reduces > MaxClusterTasks:
		return invalidf(path+".maps", j.Maps, "too many tasks")
	case !(j.Weight >= 0) || math.IsInf(j.Weight, 0):
		return invalidf(path+".weight", j.Weight, "must be a finite number ≥ 0 (0 or absent: 1)")
	case !(j.ShuffleFraction >= 0 && j.ShuffleFraction < 1):
		return invalidf(path+".shuffle_fraction", j.ShuffleFraction, "must be in [0, 1) (0: 1/3)")
	case !(j.ParallelFraction >= 0 && j.ParallelFraction < 1):
		return invalidf(path+".parallel_fraction", j.ParallelFraction, "must be in [0, 1) (0: 0.5)")
	case !(j.MapOutputMB >= 0) || j.MapOutputMB > 1e9:
		return invalidf(path+".map_output_mb", j.MapOutputMB, "must be in [0, 1e9] (0: %d)", DefaultMapOutputMB)
	}
	if len(j.InputRacks) > 0 {
		racks := map[string]bool{}
		for _, n := range s.Cluster.Nodes {
			racks[n.Rack] = true
		}
		for k, r := range j.InputRacks {
			if !racks[r] {
				return invalidf(fmt.Sprintf("%s.input_racks[%d]", path, k), r, "no node of the cluster is in this rack")
			}
		}
	}
	for _, sk := range []struct {
		name string
		s    Skew
	}{{"map_skew", j.MapSkew}, {"reduce_skew", j.ReduceSkew}} {
		if !(sk.s.Fraction >= 0 && sk.s.Fraction <= 1) {
			return invalidf(path+"."+sk.name+".fraction", sk.s.Fraction, "must be in [0, 1]")
		}
		if sk.s.Fraction > 0 && !(sk.s.Factor >= 1 && sk.s.Factor <= 1e6) {
			return invalidf(path+"."+sk.name+".factor", sk.s.Factor, "must be in [1, 1e6]")
		}
	}
	for _, tt := range []models.TaskType{models.MapTask, models.ReduceTask} {
		count, law, list := j.Maps, j.MapWork, j.MapWorks
		if tt == models.ReduceTask {
			count, law, list = j.Reduces, j.ReduceWork, j.ReduceWorks
		}
		field := path + "." + tt.String()
		if count == 0 {
			continue
		}
		if list != nil {
			if len(list) != count*stages {
				return invalidf(field+"_works", len(list), "lists %d works, want %s·stages = %d", len(list), tt.String()+"s", count*stages)
			}
			for k, w := range list {
				if !(w > 0) || math.IsInf(w, 0) {
					return invalidf(fmt.Sprintf("%s_works[%d]", field, k), w, "must be a finite number > 0")
				}
			}
		} else if law == nil {
			return invalidf(field+"_work", nil, "missing: a job with %ss needs their work law", tt)
		}
		d, ok := j.Demand[tt]
		if len(s.Cluster.Resources) > 0 {
			if ok && len(d) != len(s.Cluster.Resources) {
				return invalidf(path+".demand."+tt.String(), d.String(), "has %d amounts, the cluster has %d resources", len(d), len(s.Cluster.Resources))
			}
			for p, v := range d {
				if v < 0 || v > models.MaxResourceAmount {
					return invalidf(fmt.Sprintf("%s.demand.%s[%d]", path, tt, p), v, "must be in [0, 2^53]")
				}
			}
			if !s.fitsSomeNode(tt, d, slotCluster) {
				return invalidf(path+".demand."+tt.String(), d.String(), "no node can run a %s task of job %q", tt, j.ID)
			}
		} else if ok && len(d) > 0 {
			return invalidf(path+".demand."+tt.String(), d.String(), "the cluster names no resources")
		} else if !s.fitsSomeNode(tt, nil, slotCluster) {
			return invalidf(path+"."+tt.String()+"s", count, "no node has a %s slot", tt)
		}
	}
	return nil
}

// fitsSomeNode reports whether a task of type t with demand d (nil: none)
// fits an empty node. On a slot cluster any typed slot will do (DHSA may
// lend slots of the other type).
func (s *ClusterScenario) fitsSomeNode(t models.TaskType, d models.Resources, slotCluster bool) bool {
	for _, n := range s.Cluster.Nodes {
		if slotCluster && n.MapSlots+n.ReduceSlots == 0 {
			continue
		}
		if d == nil || d.Fits(n.Capacity) {
			return true
		}
	}
	return false
}

// Stream of the cluster model (after the placement model's streams).
const (
	// StreamLocality draws the replicas of map input blocks.
	StreamLocality Stream = iota + 16
	// StreamTaskWork draws task works and skew.
	StreamTaskWork
)

// drawWorks draws the work of every task of a scenario with its defaults
// applied (withDefaults), job by job from stream StreamTaskWork of seed:
// works[job][stage][type-1][index]. RunCluster and ClusterLowerBound draw
// through it, so a bound sees the very works of the run it bounds.
func (s *ClusterScenario) drawWorks(seed uint64) [][][2][]float64 {
	rng := NewRand(seed, StreamTaskWork)
	out := make([][][2][]float64, len(s.Jobs))
	for i := range s.Jobs {
		out[i] = s.Jobs[i].taskWorks(rng)
	}
	return out
}

// taskWorks draws (or copies) the work of every task of job j, stage by
// stage: works[stage][type-1][index].
func (j *ClusterJob) taskWorks(rng *rand.Rand) [][2][]float64 {
	out := make([][2][]float64, j.Stages)
	for st := range j.Stages {
		for k, tt := range []models.TaskType{models.MapTask, models.ReduceTask} {
			count, law, list, skew := j.Maps, j.MapWork, j.MapWorks, j.MapSkew
			if tt == models.ReduceTask {
				count, law, list, skew = j.Reduces, j.ReduceWork, j.ReduceWorks, j.ReduceSkew
			}
			w := make([]float64, count)
			for i := range w {
				if list != nil {
					w[i] = list[st*count+i]
				} else {
					w[i] = math.Max(law.Sample(rng), 1e-3)
				}
			}
			if skew.Fraction > 0 && count > 0 {
				n := int(math.Ceil(skew.Fraction * float64(count)))
				for _, i := range rng.Perm(count)[:n] {
					w[i] *= skew.Factor
				}
			}
			out[st][k] = w
		}
	}
	return out
}

package speculation

import (
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"

	"github.com/optd/optd/models"
	"github.com/optd/optd/policy"
)

// BASE is Benefit Aware Speculative Execution (Guo, Fox, Zhou, Ruan, IEEE
// Cluster'12, §III-C): Hadoop's slow-task detection, and a copy of a slow
// attempt T of job J on node N only if the copy is expected to finish
// before T. The copy's progress rate is estimated as
//
//  1. the mean rate of J's attempts of T's type that run or ran on N, if
//     any (running: ProgressScore/elapsed; finished: 1/duration);
//  2. otherwise one rate drawn from those of all of J's scheduled attempts
//     of the type, normalized to a reference node and de-normalized to N.
//     optd's views carry no node speed, so nodes count as identical and
//     normalization is the identity; the draw is a hash of (seed, attempt,
//     node, time), so a decision is reproducible and the same when BASE
//     gates another add-on's copy.
//
// The copy takes 1/rate; it is launched iff 1/rate < TimeLeft(T) (LATE
// Eq. 2). With no rate to draw from, no copy.
//
// BASE is also a policy.LaunchFilter on policy.ActionSpeculate, so in a spec with another
// speculation add-on (late, sepb) their copies are vetted the same way.
type BASE struct {
	*Speculation
	seed uint64
	// finished rates per (job, type, node) and per (job, type).
	onNode map[baseKey][]float64
	all    map[baseKey][]float64
}

type baseKey struct {
	job  string
	t    models.TaskType
	node string
}

var _ policy.Speculator = (*BASE)(nil)
var _ policy.LaunchFilter = (*BASE)(nil)
var _ policy.Observer = (*BASE)(nil)
var _ policy.Stateful = (*BASE)(nil)

// NewBASE returns BASE on Hadoop's default detection.
func NewBASE(seed uint64) *BASE {
	h := NewHadoopSpeculation()
	h.name = NameBASE
	b := &BASE{Speculation: h, seed: seed, onNode: map[baseKey][]float64{}, all: map[baseKey][]float64{}}
	h.gates = []speculationGate{b}
	return b
}

// TaskFinished implements Observer: remembers the attempt's rate 1/duration.
func (b *BASE) TaskFinished(_ *policy.ClusterView, a *policy.AttemptView, durationS float64) {
	if durationS <= 0 {
		return
	}
	r := 1 / durationS
	b.onNode[baseKey{a.Job, a.Type, a.Node}] = append(b.onNode[baseKey{a.Job, a.Type, a.Node}], r)
	b.all[baseKey{a.Job, a.Type, ""}] = append(b.all[baseKey{a.Job, a.Type, ""}], r)
}

// CopyEstimate returns the estimated duration of a copy of attempt a (of
// job j) on node, and which rule gave it (+Inf if there is nothing to
// estimate from).
func (b *BASE) CopyEstimate(c *policy.ClusterView, j *policy.JobView, a *policy.AttemptView, node string) (float64, string) {
	var local, scheduled []float64
	for _, o := range j.Running {
		if o.Type != a.Type || c.NowS <= o.StartS || o.Score <= 0 {
			continue
		}
		r := o.ProgressRate(c.NowS)
		scheduled = append(scheduled, r)
		if o.Node == node {
			local = append(local, r)
		}
	}
	local = append(local, b.onNode[baseKey{j.ID, a.Type, node}]...)
	if len(local) > 0 {
		m, _ := meanStd(local)
		return 1 / m, fmt.Sprintf("mean rate %.4g/s of %d %s attempts on %s", m, len(local), j.ID, node)
	}
	scheduled = append(scheduled, b.all[baseKey{j.ID, a.Type, ""}]...)
	if len(scheduled) == 0 {
		return math.Inf(1), "no rate of job " + j.ID + " to estimate from"
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%d/%s/%g", b.seed, a.ID, node, c.NowS)
	r := scheduled[h.Sum64()%uint64(len(scheduled))]
	return 1 / r, fmt.Sprintf("rate %.4g/s drawn from %d scheduled %s attempts", r, len(scheduled), j.ID)
}

// allowCopy is the benefit test.
func (b *BASE) allowCopy(hb *policy.Heartbeat, j *policy.JobView, a *policy.AttemptView) (bool, string) {
	est, how := b.CopyEstimate(hb.Cluster, j, a, hb.Node.ID)
	left := a.TimeLeft(hb.Cluster.NowS)
	if est < left {
		return true, fmt.Sprintf("%s: copy of attempt %d on %s expected in %.1fs < %.1fs left (%s)", NameBASE, a.ID, hb.Node.ID, est, left, how)
	}
	return false, fmt.Sprintf("%s: no copy of attempt %d on %s: expected %.1fs ≥ %.1fs left (%s)", NameBASE, a.ID, hb.Node.ID, est, left, how)
}

// Admit implements policy.LaunchFilter for copies proposed by any speculator.
func (b *BASE) Admit(hb *policy.Heartbeat, a policy.Action) (bool, string) {
	if a.Kind != policy.ActionSpeculate {
		return true, ""
	}
	j := hb.Cluster.Job(a.Job)
	if j == nil {
		return false, fmt.Sprintf("%s: job %s is not active", NameBASE, a.Job)
	}
	for _, at := range j.Running {
		if at.ID == a.Attempt {
			return b.allowCopy(hb, j, at)
		}
	}
	return false, fmt.Sprintf("%s: attempt %d is not running", NameBASE, a.Attempt)
}

// rates is one key's finished rates, the snapshot form of BASE's maps.
type rates struct {
	Job   string          `json:"job"`
	Type  models.TaskType `json:"type"`
	Node  string          `json:"node,omitempty"`
	Rates []float64       `json:"rates"`
}

// Snapshot implements policy.Stateful: the finished rates, per node and
// per job, each list in the order the tasks finished (a draw indexes it).
func (b *BASE) Snapshot() ([]byte, error) {
	list := func(m map[baseKey][]float64) []rates {
		out := make([]rates, 0, len(m))
		for k, r := range m {
			out = append(out, rates{k.job, k.t, k.node, r})
		}
		slices.SortFunc(out, func(a, b rates) int {
			return cmp.Or(cmp.Compare(a.Job, b.Job), cmp.Compare(a.Type, b.Type), cmp.Compare(a.Node, b.Node))
		})
		return out
	}
	return json.Marshal(struct {
		OnNode []rates `json:"on_node"`
		All    []rates `json:"all"`
	}{list(b.onNode), list(b.all)})
}

// Restore implements policy.Stateful.
func (b *BASE) Restore(data []byte) error {
	var st struct {
		OnNode []rates `json:"on_node"`
		All    []rates `json:"all"`
	}
	if err := policy.DecodeSnapshot(data, &st); err != nil {
		return err
	}
	onNode, all := map[baseKey][]float64{}, map[baseKey][]float64{}
	for _, l := range []struct {
		from []rates
		to   map[baseKey][]float64
	}{{st.OnNode, onNode}, {st.All, all}} {
		for _, r := range l.from {
			if !r.Type.Valid() {
				return fmt.Errorf("%w: rates of job %s: task type %d", policy.ErrInvalidConfig, r.Job, r.Type)
			}
			for _, x := range r.Rates {
				if !(x > 0) || math.IsInf(x, 1) {
					return fmt.Errorf("%w: rate %v of job %s", policy.ErrInvalidConfig, x, r.Job)
				}
			}
			l.to[baseKey{r.Job, r.Type, r.Node}] = r.Rates
		}
	}
	b.onNode, b.all = onNode, all
	return nil
}

package store

import (
	"bytes"
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/optd/optd/thresholds"
)

// memDir is the data directory of the tests' in-memory stores.
const memDir = "/data"

// memOptions are the options of a store on fs with small memtables, so that
// the engine flushes, compacts and rotates its logs within a test.
func memOptions(fs vfs.FS) Options {
	return Options{FS: fs, MinFreeBytes: -1, memTableSize: 128 << 10}
}

func openMem(t testing.TB, fs vfs.FS) *Store {
	t.Helper()
	s, err := OpenWith(memDir, memOptions(fs))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// model is what a cluster should hold, kept by applying the same changes
// in memory (a second implementation of Change's meaning).
type model struct {
	cluster  Cluster
	meta     Meta
	jobs     map[string]Job
	window   int
	seen     int64
	obs      []thresholds.Observation // the last min(seen, window)
	log      [][]byte
	policy   []byte
	nextJob  int
	nextData float64
}

func newModel(id string, window int) *model {
	c := Cluster{ID: id, Nodes: []Node{{ID: "n", Rack: "r"}}, Slots: []Slot{{Node: "n", FetchCost: 1}, {Node: "n", FetchCost: 2.5}},
		Policy: Policy{Name: "receding-horizon", Window: window}}
	return &model{cluster: c, jobs: map[string]Job{}, window: window}
}

func (m *model) estimator() *thresholds.EstimatorState {
	if m.window == 0 {
		return nil
	}
	return &thresholds.EstimatorState{Window: m.window, Seen: m.seen, Observations: slices.Clone(m.obs)}
}

func (m *model) apply(ch Change) {
	for _, id := range ch.Delete {
		delete(m.jobs, id)
	}
	for _, j := range ch.Put {
		m.jobs[j.ID] = j
	}
	if ch.Meta != nil {
		m.meta = *ch.Meta
	}
	for _, o := range ch.Observed {
		m.seen++
		m.obs = append(m.obs, o)
		if len(m.obs) > m.window {
			m.obs = m.obs[1:]
		}
	}
	if ch.TruncateLog {
		m.log = nil
	}
	for _, e := range ch.Log {
		m.log = append(m.log, bytes.Clone(e))
	}
	if ch.PolicyState != nil {
		m.policy = bytes.Clone(ch.PolicyState)
	}
}

// state is the model as Load returns it.
func (m *model) state() *State {
	st := &State{Cluster: m.cluster, Meta: m.meta, Estimator: m.estimator(), PolicyState: m.policy}
	for _, j := range m.jobs {
		st.Jobs = append(st.Jobs, j)
	}
	slices.SortFunc(st.Jobs, func(a, b Job) int { return cmp.Compare(a.Seq, b.Seq) })
	if len(m.log) > 0 {
		st.Log = m.log
	}
	return st
}

// next draws a valid change: submit, place or finish a job, with the
// counters, observations, event-log entries (now and then replacing the
// log) and policy state of a busy cluster.
func (m *model) next(rng *rand.Rand) Change {
	var ch Change
	switch k := rng.IntN(10); {
	case k < 4 || len(m.jobs) == 0:
		m.nextJob++
		meta := m.meta
		meta.LastSeq++
		ch.Put = []Job{{ID: fmt.Sprintf("j%d", m.nextJob), Maps: 1 + rng.IntN(9), Reduces: 1 + rng.IntN(2), JobsInSystem: len(m.jobs), Seq: meta.LastSeq}}
		ch.Meta = &meta
	case k < 7:
		j := m.jobs[m.someJob(rng)]
		j.Placed, j.Slots, j.DataMB = true, []int{rng.IntN(2)}, float64(rng.IntN(1000))/8
		ch.Put = []Job{j}
		if m.window > 0 {
			m.nextData++
			ch.Observed = []thresholds.Observation{{JobsInSystem: len(m.jobs), Data: m.nextData, Reduces: j.Reduces}}
		}
	default:
		meta := m.meta
		meta.Finished++
		ch.Delete, ch.Meta = []string{m.someJob(rng)}, &meta
	}
	if rng.IntN(3) == 0 {
		ch.TruncateLog = rng.IntN(8) == 0
		for range 1 + rng.IntN(3) {
			ch.Log = append(ch.Log, fmt.Appendf(nil, `{"event":%d}`, rng.Int64()))
		}
	}
	if rng.IntN(5) == 0 {
		ch.PolicyState = fmt.Appendf(nil, "policy-%d", rng.IntN(100))
	}
	return ch
}

func (m *model) someJob(rng *rand.Rand) string {
	ids := slices.Sorted(maps.Keys(m.jobs))
	return ids[rng.IntN(len(ids))]
}

// sameState compares two states as Load returns them.
func sameState(a, b *State) bool {
	norm := func(s *State) State {
		c := *s
		if len(c.Log) == 0 {
			c.Log = nil
		}
		if len(c.Jobs) == 0 {
			c.Jobs = nil
		}
		if c.Estimator != nil && len(c.Estimator.Observations) == 0 {
			e := *c.Estimator
			e.Observations = nil
			c.Estimator = &e
		}
		return c
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

package store

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestPowerLoss drops every write after the last sync, as a power loss
// does, at random moments of a busy store, and checks that the store then
// holds exactly the acknowledged changes, plus possibly changes in flight:
// each of 8 writers owns a cluster and keeps up to 4 changes queued; the
// engine flushes, compacts and rotates its logs meanwhile (small
// memtables). Pebble's crash-cloning in-memory file system keeps only what
// was synced (and, in half of the rounds, a random share of what was not,
// as a disk that wrote some pages back before the power went). Each crash
// image is opened again, checked against the writers' models, and then
// takes the next round's writes, so later rounds start from recovered
// stores.
func TestPowerLoss(t *testing.T) {
	rounds := 12
	if testing.Short() {
		rounds = 4
	}
	const writers, inFlight = 8, 4
	rng := rand.New(rand.NewPCG(17, 1))
	fs := vfs.NewCrashableMem()
	s := openMem(t, fs)
	models := make([]*model, writers)
	for w := range models {
		models[w] = newModel(fmt.Sprint("c", w), 1+w%3*4)
		if err := s.Create(t.Context(), models[w].cluster, models[w].estimator()); err != nil {
			t.Fatal(err)
		}
	}
	totalAcked := 0
	for round := range rounds {
		// history[w] holds the model after each change the writer queued;
		// acked[w] counts the acknowledged ones.
		history := make([][]*State, writers)
		acked := make([]atomic.Int64, writers)
		queued := make([]atomic.Int64, writers)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := range writers {
			history[w] = []*State{models[w].state()}
			wrng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				m := models[w]
				var waits []<-chan error
				for {
					select {
					case <-stop:
						return
					default:
					}
					ch := m.next(wrng)
					m.apply(ch)
					history[w] = append(history[w], m.state())
					// Counted before it is queued: the crash may take it
					// the moment it is.
					queued[w].Add(1)
					waits = append(waits, s.Enqueue(m.cluster.ID, 1, ch))
					if len(waits) == inFlight {
						if err := <-waits[0]; err != nil {
							return // the store was closed under the writer
						}
						waits = waits[1:]
						acked[w].Add(1)
					}
				}
			}()
		}
		time.Sleep(time.Duration(20+rng.IntN(80)) * time.Millisecond)
		ackedBefore := make([]int64, writers)
		for w := range writers {
			ackedBefore[w] = acked[w].Load()
		}
		cfg := vfs.CrashCloneCfg{}
		if round%2 == 1 {
			cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: rng.IntN(100), RNG: rand.New(rand.NewPCG(uint64(round), 99))}
		}
		crashed := fs.CrashClone(cfg)
		queuedAfter := make([]int64, writers)
		for w := range writers {
			queuedAfter[w] = queued[w].Load()
		}
		close(stop)
		s.Close()
		wg.Wait()

		s = openMem(t, crashed)
		fs = crashed
		for w, m := range models {
			got, err := s.Load(t.Context(), m.cluster.ID)
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			n := -1
			for k := ackedBefore[w]; k <= queuedAfter[w]; k++ {
				if sameState(got, history[w][k]) {
					n = int(k)
					break
				}
			}
			if n < 0 {
				t.Fatalf("round %d, cluster %s: the recovered state is not the state after any of changes %d (acknowledged) to %d (queued):\n got %+v\nlast acknowledged %+v",
					round, m.cluster.ID, ackedBefore[w], queuedAfter[w], got, history[w][ackedBefore[w]])
			}
			// Continue from what survived: rebuild the model from it.
			models[w] = modelFrom(got, m)
			totalAcked += int(ackedBefore[w])
		}
		t.Logf("round %d (unsynced data kept: %d%%): recovered, torn tail %d bytes", round, cfg.UnsyncedDataPercent, s.Recovered().TornTailBytes)
	}
	s.Close()
	t.Logf("%d rounds, %d acknowledged changes before the crashes: none lost, none invented", rounds, totalAcked)
}

// modelFrom rebuilds a writer's model from a recovered state.
func modelFrom(st *State, old *model) *model {
	m := newModel(st.Cluster.ID, old.window)
	m.meta, m.log, m.policy, m.nextJob, m.nextData = st.Meta, st.Log, st.PolicyState, old.nextJob, old.nextData
	for _, j := range st.Jobs {
		m.jobs[j.ID] = j
	}
	if st.Estimator != nil {
		m.seen, m.obs = st.Estimator.Seen, st.Estimator.Observations
	}
	return m
}

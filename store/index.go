package store

import (
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/optd/optd/thresholds"
)

// clusterIndex is what the committer checks a change against and needs to
// write it: a cluster's job ids, its estimator header and the number of its
// next event-log entry. Open builds it for every cluster while it verifies
// the store (verifyAll); from then on only the committer goroutine reads or
// changes it, and it stays exact because every change goes through the
// committer.
type clusterIndex struct {
	jobs    map[string]struct{}
	est     *estimatorHeader // nil: created without an estimator
	logNext uint64
}

func (c *clusterIndex) hasJob(id string) bool {
	_, ok := c.jobs[id]
	return ok
}

// readCluster reads and checks every record of cluster id from it, an
// iterator bounded to the cluster's prefix. It returns nil state if the
// cluster has no record. Every value is checked (openRecord) and decoded
// strictly, and the records must fit together: a description and counters,
// keys that name the records they hold, an estimator window whose ring
// holds exactly the last min(seen, ω) observations.
func readCluster(id string, it *pebble.Iterator) (*State, *clusterIndex, error) {
	st := &State{}
	x := &clusterIndex{jobs: map[string]struct{}{}}
	seen := false
	haveDesc, haveMeta := false, false
	var ring map[uint64]thresholds.Observation
	for ok := it.First(); ok; ok = it.Next() {
		seen = true
		k := it.Key()
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, nil, err
		}
		ck, valid := parseKey(k)
		if !valid || ck.cluster != id {
			return nil, nil, &DamageError{Key: describeKey(k), Reason: "a key optd does not write"}
		}
		damage := func(format string, args ...any) error {
			return &DamageError{Key: describeKey(k), Reason: fmt.Sprintf(format, args...)}
		}
		switch ck.sub {
		case subDescription:
			if err := decodeJSON(k, v, &st.Cluster); err != nil {
				return nil, nil, err
			}
			if st.Cluster.ID != id {
				return nil, nil, damage("the description is of cluster %q", st.Cluster.ID)
			}
			haveDesc = true
		case subEstimator:
			var h estimatorHeader
			if err := decodeJSON(k, v, &h); err != nil {
				return nil, nil, err
			}
			if h.Window < 1 || h.Seen < 0 {
				return nil, nil, damage("estimator window %d, seen %d", h.Window, h.Seen)
			}
			x.est, ring = &h, map[uint64]thresholds.Observation{}
		case subJob:
			var j Job
			if err := decodeJSON(k, v, &j); err != nil {
				return nil, nil, err
			}
			if j.ID != ck.name {
				return nil, nil, damage("the record is of job %q", j.ID)
			}
			st.Jobs = append(st.Jobs, j)
			x.jobs[j.ID] = struct{}{}
		case subLog:
			payload, err := openRecord(k, v)
			if err != nil {
				return nil, nil, err
			}
			st.Log = append(st.Log, slices.Clone(payload))
			x.logNext = ck.n + 1
		case subMeta:
			if err := decodeJSON(k, v, &st.Meta); err != nil {
				return nil, nil, err
			}
			haveMeta = true
		case subObservation:
			if x.est == nil {
				return nil, nil, damage("an observation of a cluster without an estimator header")
			}
			if ck.n >= uint64(x.est.Window) {
				return nil, nil, damage("ring slot %d of a window of %d", ck.n, x.est.Window)
			}
			var o thresholds.Observation
			if err := decodeJSON(k, v, &o); err != nil {
				return nil, nil, err
			}
			ring[ck.n] = o
		case subPolicy:
			payload, err := openRecord(k, v)
			if err != nil {
				return nil, nil, err
			}
			st.PolicyState = slices.Clone(payload)
		case subBeat:
			payload, err := openRecord(k, v)
			if err != nil {
				return nil, nil, err
			}
			if st.Beats == nil {
				st.Beats = map[string][]byte{}
			}
			st.Beats[ck.name] = slices.Clone(payload)
		}
	}
	if err := it.Error(); err != nil {
		return nil, nil, err
	}
	if !seen {
		return nil, nil, nil
	}
	if !haveDesc || !haveMeta {
		return nil, nil, &DamageError{Key: describeKey(subKey(id, subDescription)),
			Reason: fmt.Sprintf("cluster %q has records but no description or no counters (description %v, counters %v)", id, haveDesc, haveMeta)}
	}
	if x.est != nil {
		var err error
		if st.Estimator, err = x.est.window(id, ring); err != nil {
			return nil, nil, err
		}
	}
	return st, x, nil
}

// verifyAll reads and checks every record of the store (readCluster for
// each cluster, and no key outside the space optd writes) and returns the
// index of every cluster.
func verifyAll(db *pebble.DB) (map[string]*clusterIndex, error) {
	if err := checkOutsideKeys(db); err != nil {
		return nil, err
	}
	index := map[string]*clusterIndex{}
	ids, err := listClusters(db)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		_, x, err := loadCluster(db, id)
		if err != nil {
			return nil, err
		}
		index[id] = x
	}
	return index, nil
}

// loadCluster reads and checks cluster id (nil state if it has no record).
func loadCluster(db *pebble.DB, id string) (*State, *clusterIndex, error) {
	prefix := clusterPrefix(id)
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, nil, err
	}
	st, x, err := readCluster(id, it)
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return st, x, err
}

// checkOutsideKeys checks that nothing but the format and shutdown records
// lies outside the clusters' key space.
func checkOutsideKeys(db *pebble.DB) error {
	for _, r := range [][2][]byte{
		{nil, keyFormatRecord},
		{[]byte{tagFormat, 0}, []byte{tagCluster}},
		{[]byte{tagCluster + 1}, keyShutdown},
		{[]byte{tagShutdown, 0}, nil},
	} {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: r[0], UpperBound: r[1]})
		if err != nil {
			return err
		}
		ok := it.First()
		var k []byte
		if ok {
			k = slices.Clone(it.Key())
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return err
		}
		if ok {
			return &DamageError{Key: describeKey(k), Reason: "a key optd does not write"}
		}
	}
	return nil
}

// listClusters returns the id of every cluster with a record, in key order.
func listClusters(db *pebble.DB) ([]string, error) {
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{tagCluster}, UpperBound: []byte{tagCluster + 1}})
	if err != nil {
		return nil, err
	}
	var ids []string
	for ok := it.First(); ok; {
		ck, valid := parseKey(it.Key())
		if !valid {
			k := slices.Clone(it.Key())
			it.Close()
			return nil, &DamageError{Key: describeKey(k), Reason: "a key optd does not write"}
		}
		ids = append(ids, ck.cluster)
		ok = it.SeekGE(prefixEnd(clusterPrefix(ck.cluster)))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return nil, err
	}
	return ids, nil
}

package store

import (
	bolt "go.etcd.io/bbolt"
)

// index is what the committer checks changes against (checkFacts): per
// cluster, the ids of its stored jobs and whether it has an estimator. A
// cluster enters the index, read from bbolt, at its first change after
// Open; from then on only the committer changes its jobs, so the index
// stays exact while bbolt waits for the next checkpoint. Only the committer
// goroutine uses it.
type index struct {
	db       *bolt.DB
	clusters map[string]*clusterIndex
}

type clusterIndex struct {
	jobs      map[string]struct{}
	estimator bool
}

func (c *clusterIndex) hasJob(id string) bool {
	_, ok := c.jobs[id]
	return ok
}

func (c *clusterIndex) hasEstimator() bool { return c.estimator }

func newIndex(db *bolt.DB) *index {
	return &index{db: db, clusters: map[string]*clusterIndex{}}
}

// cluster returns cluster id's entry, reading it from bbolt the first time
// (nil if there is no such cluster: an absence is not remembered, since
// Create may add the cluster).
func (x *index) cluster(id string) (*clusterIndex, error) {
	if c, ok := x.clusters[id]; ok {
		return c, nil
	}
	var c *clusterIndex
	err := x.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClusters).Bucket([]byte(id))
		if b == nil {
			return nil
		}
		c = &clusterIndex{jobs: map[string]struct{}{}, estimator: b.Bucket(keyEstimator) != nil}
		return b.Bucket(bucketJobs).ForEach(func(k, _ []byte) error {
			c.jobs[string(k)] = struct{}{}
			return nil
		})
	})
	if err != nil || c == nil {
		return nil, err
	}
	x.clusters[id] = c
	return c, nil
}

// check checks that ch applies to cluster id.
func (x *index) check(id string, ch Change) error {
	c, err := x.cluster(id)
	if err != nil {
		return err
	}
	if c == nil {
		return checkFacts(id, nil, ch)
	}
	return checkFacts(id, c, ch)
}

// apply records a checked change: deletes, then puts (as writeChange).
func (x *index) apply(id string, ch Change) {
	c := x.clusters[id]
	for _, jid := range ch.Delete {
		delete(c.jobs, jid)
	}
	for _, j := range ch.Put {
		c.jobs[j.ID] = struct{}{}
	}
}

package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/thresholds"
)

// On-disk format versions.
//
// Format 1 (no "optd" bucket): each cluster bucket held the description
// under key "cluster" and the whole estimator window as one JSON value under
// key "estimator". Every commit then rewrote the cluster bucket's node —
// description included (tens of KiB for a thousand slots) — and re-encoded
// the whole window.
//
// Format 2 (bucket "optd", key "format" = 2): the description is under key
// "cluster" of the nested bucket "description", which no commit touches, and
// the window is the bucket "estimator" (see estimator.go), one record per
// observation. Open migrates a format-1 database in one transaction (all or
// nothing). A format-1 optd reading a format-2 database fails on its first
// Load with ErrCorrupt (missing "cluster") instead of misreading it.
const formatVersion = 2

var (
	bucketOptd        = []byte("optd")
	keyFormat         = []byte("format")
	bucketDescription = []byte("description")
)

// initFormat creates the buckets of an empty database, migrates an older
// format and refuses a newer one.
func initFormat(tx *bolt.Tx) error {
	fresh := tx.Bucket(bucketClusters) == nil
	root, err := tx.CreateBucketIfNotExists(bucketClusters)
	if err != nil {
		return err
	}
	meta, err := tx.CreateBucketIfNotExists(bucketOptd)
	if err != nil {
		return err
	}
	version := 1
	if fresh {
		version = formatVersion
	} else if meta.Get(keyFormat) != nil {
		if err := getJSON(meta, keyFormat, &version); err != nil {
			return err
		}
	}
	switch {
	case version > formatVersion:
		return fmt.Errorf("%w: the database is format %d, this optd reads formats up to %d (upgrade optd)", ErrFormat, version, formatVersion)
	case version < 1:
		return fmt.Errorf("%w: the database says format %d", ErrCorrupt, version)
	case version == 1:
		// Format 1 to 2 (then 3, a number).
		if err := migrateV1(root); err != nil {
			return fmt.Errorf("store: migrating format 1 to %d: %w", formatVersion, err)
		}
	}
	if version == formatVersion && !fresh {
		return nil
	}
	return putJSON(meta, keyFormat, formatVersion)
}

// migrateV1 rewrites every format-1 cluster bucket in format 2.
func migrateV1(root *bolt.Bucket) error {
	var ids [][]byte
	if err := root.ForEachBucket(func(k []byte) error {
		ids = append(ids, bytes.Clone(k))
		return nil
	}); err != nil {
		return err
	}
	for _, id := range ids {
		b := root.Bucket(id)
		desc := bytes.Clone(b.Get(keyCluster))
		if desc == nil {
			return fmt.Errorf("%w: cluster %q: missing %q", ErrCorrupt, id, keyCluster)
		}
		if err := b.Delete(keyCluster); err != nil {
			return err
		}
		d, err := b.CreateBucket(bucketDescription)
		if err != nil {
			return err
		}
		if err := d.Put(keyCluster, desc); err != nil {
			return err
		}
		data := b.Get(keyEstimator)
		if data == nil {
			continue
		}
		var est thresholds.EstimatorState
		if err := json.Unmarshal(data, &est); err != nil {
			return fmt.Errorf("%w: cluster %q: %q: %w", ErrCorrupt, id, keyEstimator, err)
		}
		if err := b.Delete(keyEstimator); err != nil {
			return err
		}
		eb, err := b.CreateBucket(keyEstimator)
		if err != nil {
			return err
		}
		if err := putEstimator(eb, &est); err != nil {
			return fmt.Errorf("cluster %q: %w", id, err)
		}
	}
	return nil
}

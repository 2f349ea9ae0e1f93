package store

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// The key space (see doc.go). Every key of a cluster starts with the
// cluster's prefix, so that one range deletion removes a cluster and one
// iterator reads it:
//
//	F                                  the format record
//	S                                  written by Close, removed by Open
//	K ‖ len(id) (2 bytes, BE) ‖ id ‖ d the description (JSON Cluster)
//	                            ‖ e    the estimator header
//	                            ‖ j ‖ job id                a job (JSON Job)
//	                            ‖ l ‖ seq (8 bytes, BE)     an event-log entry
//	                            ‖ m    the counters (JSON Meta)
//	                            ‖ o ‖ ring index (8 bytes, BE) an observation
//	                            ‖ p    the policy state (opaque)
//	                            ‖ b ‖ node id  a node's last heartbeat (opaque)
//
// The length prefix makes a cluster's keys a prefix of no other cluster's
// whatever bytes the ids hold.

const (
	tagFormat   = 'F'
	tagCluster  = 'K'
	tagShutdown = 'S'

	subDescription = 'd'
	subEstimator   = 'e'
	subJob         = 'j'
	subLog         = 'l'
	subMeta        = 'm'
	subObservation = 'o'
	subPolicy      = 'p'
	subBeat        = 'b'
)

// maxIDBytes bounds a cluster id (its length is stored in 2 bytes).
const maxIDBytes = 1<<16 - 1

var (
	keyFormatRecord = []byte{tagFormat}
	keyShutdown     = []byte{tagShutdown}
)

// checkClusterID refuses ids the key space cannot hold.
func checkClusterID(id string) error {
	if id == "" || len(id) > maxIDBytes {
		return fmt.Errorf("%w: cluster id of %d bytes (want 1 to %d)", ErrInvalid, len(id), maxIDBytes)
	}
	return nil
}

// clusterPrefix is the prefix of every key of cluster id.
func clusterPrefix(id string) []byte {
	k := make([]byte, 0, 3+len(id)+9)
	k = append(k, tagCluster)
	k = binary.BigEndian.AppendUint16(k, uint16(len(id)))
	return append(k, id...)
}

// prefixEnd is the first key after every key that starts with prefix
// (prefix ends with the cluster id, whose successor keys start with the
// sub-key tags, all below 0xff).
func prefixEnd(prefix []byte) []byte { return append(prefix[:len(prefix):len(prefix)], 0xff) }

func subKey(id string, sub byte) []byte { return append(clusterPrefix(id), sub) }

func jobKey(id, job string) []byte { return append(subKey(id, subJob), job...) }

func beatKey(id, node string) []byte { return append(subKey(id, subBeat), node...) }

func seqKey(id string, sub byte, n uint64) []byte {
	return binary.BigEndian.AppendUint64(subKey(id, sub), n)
}

// clusterKey is a decoded key of a cluster.
type clusterKey struct {
	cluster string
	sub     byte
	// name is the job id of a job key, the node id of a beat key; n the number of a log or
	// observation key.
	name string
	n    uint64
}

// parseKey decodes a key of the cluster space; ok is false if k is not one.
func parseKey(k []byte) (ck clusterKey, ok bool) {
	if len(k) < 4 || k[0] != tagCluster {
		return ck, false
	}
	n := int(binary.BigEndian.Uint16(k[1:3]))
	if len(k) < 3+n+1 || n == 0 {
		return ck, false
	}
	ck.cluster, ck.sub = string(k[3:3+n]), k[3+n]
	rest := k[3+n+1:]
	switch ck.sub {
	case subDescription, subEstimator, subMeta, subPolicy:
		return ck, len(rest) == 0
	case subJob, subBeat:
		ck.name = string(rest)
		return ck, len(rest) > 0
	case subLog, subObservation:
		if len(rest) != 8 {
			return ck, false
		}
		ck.n = binary.BigEndian.Uint64(rest)
		return ck, true
	}
	return ck, false
}

// describeKey renders a key for messages: K/"place"/j/"j12", K/"hb"/l/17.
func describeKey(k []byte) string {
	if len(k) == 1 && k[0] == tagFormat {
		return "F (the format record)"
	}
	if len(k) == 1 && k[0] == tagShutdown {
		return "S (the clean-shutdown record)"
	}
	ck, ok := parseKey(k)
	if !ok {
		return fmt.Sprintf("%q (not a key optd writes)", k)
	}
	s := fmt.Sprintf("K/%s/%c", strconv.Quote(ck.cluster), ck.sub)
	switch ck.sub {
	case subJob, subBeat:
		s += "/" + strconv.Quote(ck.name)
	case subLog, subObservation:
		s += "/" + strconv.FormatUint(ck.n, 10)
	}
	return s
}

package store

import (
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/optd/optd/thresholds"
)

// The estimator window on disk (format 2).
//
// A cluster's bucket "estimator" holds the window ω and the count Seen of
// observations ever recorded under key "state" (JSON estimatorHeader), and
// the observations themselves as a ring: the observation numbered k (1, 2,
// …, in arrival order) is stored under the 8-byte big-endian key (k−1) mod ω
// (JSON thresholds.Observation). The window is then the observations
// numbered Seen−n+1 … Seen with n = min(Seen, ω). Recording an observation
// writes one ring record and the header, whatever ω is.

var keyEstimatorState = []byte("state")

// estimatorHeader is the record under key "state".
type estimatorHeader struct {
	Window int   `json:"window"`
	Seen   int64 `json:"seen"`
}

// ringKey is the key of the ring slot of observation number k ≥ 1.
func ringKey(k int64, window int) []byte {
	return binary.BigEndian.AppendUint64(nil, uint64((k-1)%int64(window)))
}

// putEstimator writes a whole window into the (new, empty) bucket b.
func putEstimator(b *bolt.Bucket, est *thresholds.EstimatorState) error {
	if est.Window < 1 || est.Seen < 0 || int64(len(est.Observations)) != min(est.Seen, int64(est.Window)) {
		return fmt.Errorf("store: estimator window %d holds %d observations of %d seen, want the last min(seen, window)",
			est.Window, len(est.Observations), est.Seen)
	}
	first := est.Seen - int64(len(est.Observations)) + 1
	for i, o := range est.Observations {
		if err := putJSON(b, ringKey(first+int64(i), est.Window), o); err != nil {
			return err
		}
	}
	return putJSON(b, keyEstimatorState, estimatorHeader{Window: est.Window, Seen: est.Seen})
}

// appendObservations records obs (oldest first) in the window of bucket b.
func appendObservations(b *bolt.Bucket, obs []thresholds.Observation) error {
	var h estimatorHeader
	if err := getJSON(b, keyEstimatorState, &h); err != nil {
		return err
	}
	for _, o := range obs {
		h.Seen++
		if err := putJSON(b, ringKey(h.Seen, h.Window), o); err != nil {
			return err
		}
	}
	return putJSON(b, keyEstimatorState, h)
}

// loadEstimator reads the window of bucket b.
func loadEstimator(b *bolt.Bucket) (*thresholds.EstimatorState, error) {
	var h estimatorHeader
	if err := getJSON(b, keyEstimatorState, &h); err != nil {
		return nil, err
	}
	if h.Window < 1 || h.Seen < 0 {
		return nil, fmt.Errorf("%w: estimator state window %d, seen %d", ErrCorrupt, h.Window, h.Seen)
	}
	n := min(h.Seen, int64(h.Window))
	est := &thresholds.EstimatorState{Window: h.Window, Seen: h.Seen, Observations: make([]thresholds.Observation, n)}
	for i := range est.Observations {
		k := h.Seen - n + 1 + int64(i)
		data := b.Get(ringKey(k, h.Window))
		if data == nil {
			return nil, fmt.Errorf("%w: estimator observation %d (of %d seen) is missing", ErrCorrupt, k, h.Seen)
		}
		if err := json.Unmarshal(data, &est.Observations[i]); err != nil {
			return nil, fmt.Errorf("%w: estimator observation %d: %w", ErrCorrupt, k, err)
		}
	}
	return est, nil
}

package store

import (
	"encoding/json"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/optd/optd/thresholds"
)

// The estimator window.
//
// A cluster's key "e" holds the window ω and the count Seen of observations
// ever recorded (JSON estimatorHeader), and the observations themselves
// form a ring: the observation numbered k (1, 2, …, in arrival order) is
// stored under key "o" ‖ (k−1) mod ω. The window is then the observations
// numbered Seen−n+1 … Seen with n = min(Seen, ω). Recording an observation
// writes one ring record and the header, whatever ω is.

// estimatorHeader is the record under key "e".
type estimatorHeader struct {
	Window int   `json:"window"`
	Seen   int64 `json:"seen"`
}

// checkWindow refuses a window that is not the last min(seen, ω)
// observations.
func checkWindow(est *thresholds.EstimatorState) error {
	if est.Window < 1 || est.Seen < 0 || int64(len(est.Observations)) != min(est.Seen, int64(est.Window)) {
		return fmt.Errorf("%w: estimator window %d holds %d observations of %d seen, want the last min(seen, window)",
			ErrInvalid, est.Window, len(est.Observations), est.Seen)
	}
	return nil
}

// ringSlot is the ring slot of observation number k ≥ 1.
func (h *estimatorHeader) ringSlot(k int64) uint64 { return uint64((k - 1) % int64(h.Window)) }

// newCreateOp encodes a new cluster's description and estimator window.
func newCreateOp(c Cluster, est *thresholds.EstimatorState) (*createOp, error) {
	desc, err := encodeJSON(subKey(c.ID, subDescription), c)
	if err != nil {
		return nil, err
	}
	op := &createOp{desc: desc}
	if est == nil {
		return op, nil
	}
	if err := checkWindow(est); err != nil {
		return nil, err
	}
	op.est = &estimatorHeader{Window: est.Window, Seen: est.Seen - int64(len(est.Observations))}
	for i, o := range est.Observations {
		data, err := json.Marshal(o)
		if err != nil {
			return nil, fmt.Errorf("%w: estimator observation %d: %w", ErrInvalid, i, err)
		}
		op.observed = append(op.observed, data)
	}
	return op, nil
}

// appendObservations records observations (their JSON payloads, oldest
// first) after the window h of cluster id, into b, and advances h.
func appendObservations(b *pebble.Batch, id string, h *estimatorHeader, payloads [][]byte) error {
	for _, data := range payloads {
		h.Seen++
		k := seqKey(id, subObservation, h.ringSlot(h.Seen))
		if err := b.Set(k, sealRecord(k, data), nil); err != nil {
			return err
		}
	}
	k := subKey(id, subEstimator)
	v, err := encodeJSON(k, h)
	if err != nil {
		return err
	}
	return b.Set(k, v, nil)
}

// window assembles the stored window from its ring slots, which must be
// exactly those of the last min(seen, ω) observations.
func (h *estimatorHeader) window(id string, ring map[uint64]thresholds.Observation) (*thresholds.EstimatorState, error) {
	n := min(h.Seen, int64(h.Window))
	est := &thresholds.EstimatorState{Window: h.Window, Seen: h.Seen, Observations: make([]thresholds.Observation, n)}
	for i := range est.Observations {
		k := h.Seen - n + 1 + int64(i)
		o, ok := ring[h.ringSlot(k)]
		if !ok {
			return nil, &DamageError{Key: describeKey(seqKey(id, subObservation, h.ringSlot(k))),
				Reason: fmt.Sprintf("estimator observation %d (of %d seen) is missing", k, h.Seen)}
		}
		est.Observations[i] = o
	}
	if int64(len(ring)) != n {
		return nil, &DamageError{Key: describeKey(subKey(id, subEstimator)),
			Reason: fmt.Sprintf("the ring holds %d observations, the header says the window holds %d", len(ring), n)}
	}
	return est, nil
}

package server

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/proto"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/store"
)

// A node's heartbeat memory: the seq and answer of its last heartbeat with
// a seq (a retry gets that answer again) and its clock at its last
// heartbeat (now_s never goes back). It is kept with the cluster's state,
// written in the same store change as each heartbeat that changes the
// cluster, so that a retry after a restart is still recognised: the
// heartbeat it repeats was either durable with its memory or not applied
// at all. A heartbeat that changes nothing durable updates the memory
// only in memory (re-deciding its retry after a restart applies nothing
// that was not already applied).

// beatRecord is the stored form of a node's memory.
type beatRecord struct {
	Seq  uint64  `json:"seq,omitempty"`
	NowS float64 `json:"now_s"`
	// Answer is the answer of the heartbeat with Seq (protobuf).
	Answer []byte `json:"answer,omitempty"`
}

// rememberBeat updates node's memory after a heartbeat served at nowS
// (seq 0: none) and, if the heartbeat changes the cluster (ch not nil,
// noChange or dirty), puts the memory in ch.
func (c *cluster) rememberBeat(node string, seq uint64, nowS float64, resp *optdv1.HeartbeatResponse, ch *store.Change) error {
	if c.lastNowS == nil {
		c.lastNowS = map[string]float64{}
	}
	c.lastNowS[node] = nowS
	if seq > 0 {
		if c.beats == nil {
			c.beats = map[string]beatAnswer{}
		}
		c.beats[node] = beatAnswer{seq: seq, resp: resp}
	}
	if ch == nil || ch == noChange || ch == dirty {
		return nil
	}
	rec := beatRecord{NowS: nowS}
	if last, ok := c.beats[node]; ok {
		answer, err := proto.Marshal(last.resp)
		if err != nil {
			return err
		}
		rec.Seq, rec.Answer = last.seq, answer
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ch.Beats = map[string][]byte{node: data}
	return nil
}

// restoreBeats rebuilds the nodes' memory from the stored records.
func (c *cluster) restoreBeats(stored map[string][]byte) error {
	for node, data := range stored {
		var rec beatRecord
		if err := json.Unmarshal(data, &rec); err != nil {
			return fmt.Errorf("%w: cluster %q: node %q's heartbeat record: %v", store.ErrCorrupt, c.st.Cluster.ID, node, err)
		}
		if c.lastNowS == nil {
			c.lastNowS = map[string]float64{}
		}
		c.lastNowS[node] = rec.NowS
		if rec.Seq == 0 {
			continue
		}
		resp := &optdv1.HeartbeatResponse{}
		if err := proto.Unmarshal(rec.Answer, resp); err != nil {
			return fmt.Errorf("%w: cluster %q: node %q's last answer: %v", store.ErrCorrupt, c.st.Cluster.ID, node, err)
		}
		if c.beats == nil {
			c.beats = map[string]beatAnswer{}
		}
		c.beats[node] = beatAnswer{seq: rec.Seq, resp: resp}
	}
	return nil
}

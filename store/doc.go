// Package store persists optd's live-cluster state in an embedded bbolt
// database (one file, by default optd-data/optd.db): each cluster's
// description (nodes, reduce slots with fetch costs, placement policy), its
// unfinished jobs with the reduce slots they hold (the slot occupancy), the
// placement policy's estimator window (thresholds.EstimatorState) and
// counters.
//
// Durability: every write is one bbolt read-write transaction, and bbolt
// commits with fsync (NoSync is never set), so a change is on disk before
// [Store.Create] or [Store.Commit] returns nil; a crash at any moment leaves
// either the whole transaction or none of it. Callers acknowledge a change
// only after the commit returned.
//
// Concurrency: bbolt serializes writers; callers that need read-modify-write
// atomicity per cluster (the server) hold their own per-cluster lock around
// Load and Commit. Reads run concurrently with each other.
//
// Layout: bucket "clusters" holds one nested bucket per cluster id with keys
// "cluster" (JSON [Cluster]), "meta" (JSON counters), "estimator" (JSON
// thresholds.EstimatorState, absent if the policy has none) and a nested
// bucket "jobs" keyed by job id (JSON [Job]).
package store

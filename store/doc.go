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
// Layout (format 2, see format.go; Open migrates format 1): bucket
// "clusters" holds one nested bucket per cluster id with key "meta" (JSON
// counters) and nested buckets "description" (key "cluster": JSON
// [Cluster]), "jobs" keyed by job id (JSON [Job]), "estimator" (the
// window as a ring of JSON observations, see estimator.go; absent if the
// policy has none) and "log" (the event log, keyed by big-endian sequence
// number; absent until the first entry). Bucket "optd" holds the format
// version. A commit
// rewrites only the pages of the records it changes: the description, large
// and immutable, is never rewritten, and recording an estimator observation
// writes that observation, not the window.
package store

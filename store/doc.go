// Package store persists optd's live-cluster state in an embedded bbolt
// database (one file, by default optd-data/optd.db): each cluster's
// description (nodes, reduce slots with fetch costs, placement policy), its
// unfinished jobs with the reduce slots they hold (the slot occupancy), the
// placement policy's estimator window (thresholds.EstimatorState) and
// counters.
//
// Durability: a change queued with [Store.Enqueue] (or [Store.Commit]) is
// acknowledged once the write-ahead log record holding it is synced (one
// write and one fdatasync per group of changes, see wal.go and group.go);
// a checkpointer moves logged changes into the bbolt file in large
// transactions (checkpoint.go), and Open replays what the log holds beyond
// the last checkpoint. [Store.Create] writes bbolt directly (committed with
// fsync; NoSync is never set). A crash at any moment loses no acknowledged
// change and leaves no half-written one: a torn last log record was never
// acknowledged and is dropped, and a bbolt transaction is all or nothing.
//
// Concurrency: callers that need read-modify-write atomicity per cluster
// (the server) hold their own per-cluster lock around Load and their
// changes. Reads run concurrently with each other and with the log.
//
// Layout (format 3, see format.go; Open migrates formats 1 and 2): bucket
// "clusters" holds one nested bucket per cluster id with key "meta" (JSON
// counters) and nested buckets "description" (key "cluster": JSON
// [Cluster]), "jobs" keyed by job id (JSON [Job]), "estimator" (the
// window as a ring of JSON observations, see estimator.go; absent if the
// policy has none) and "log" (the event log, keyed by big-endian sequence
// number; absent until the first entry). Bucket "optd" holds the format
// version and the LSN of the last log record checkpointed. Beside the
// file, directory optd.db.wal holds the log's segments. A checkpoint
// rewrites only the pages of the records it changes: the description, large
// and immutable, is never rewritten, and recording an estimator observation
// writes that observation, not the window.
package store

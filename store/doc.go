// Package store persists optd's live-cluster state: each cluster's
// description (nodes, reduce slots with fetch costs, placement policy), its
// unfinished jobs with the reduce slots they hold, the placement policy's
// estimator window (thresholds.EstimatorState), its counters, the heartbeat
// ledger's event log, an opaque policy state and an opaque record of each
// node's last heartbeat (its seq, answer and clock, for retries).
//
// Engine: Pebble (CockroachDB's storage engine), in DATA_DIR/state. A change
// queued with [Store.Enqueue] (or [Store.Commit], [Store.Create],
// [Store.Delete]) is acknowledged once the engine's write-ahead log holds it
// synced; changes queued meanwhile share one batch and the engine joins the
// syncs of batches in flight (commit.go). The engine moves logged changes
// into checksummed tables and compacts them in the background, so the disk
// and a restart follow the live state, not the history.
//
// Damage is detected and refused, never repaired by guessing (see
// record.go, guard.go, open.go):
//
//   - every value carries its own CRC-32C over key and payload and is
//     decoded strictly, beside the engine's checksums of every log chunk and
//     table block;
//   - the guard witnesses what checksums cannot see: an engine log
//     truncated or deleted, a manifest cut short;
//   - Open verifies everything before it serves (the guard, the logs, every
//     block of every table, every record) and on damage returns an error
//     naming the file, offset or key, having changed nothing;
//   - the one repair is a torn write at the end of the newest log, written
//     but never synced, so never acknowledged: it is dropped, saved under
//     DATA_DIR/torn-tails and logged;
//   - [Check] verifies a data directory offline (`optd store check`).
//
// Disk full and I/O errors (health.go): below a reserve of free space the
// store is read-only (ErrReadOnly, nothing written) until space is freed; a
// failed write or sync of the log fails the store (ErrFailed) until optd is
// restarted, and is never retried.
//
// Concurrency: callers that need read-modify-write atomicity per cluster
// (the server) hold their own per-cluster lock around Load and their
// changes. Reads run concurrently with each other and with writes.
//
// Layout: see keys.go (the key space), record.go (a value), estimator.go
// (the estimator ring). Open migrates the bbolt stores of formats 1 to 3
// (DATA_DIR/optd.db and its log, legacy.go) and keeps their files, renamed.
package store

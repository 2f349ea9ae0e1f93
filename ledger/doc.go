// Package ledger is a scheduler's record of one cluster at task level: its
// nodes and their typed slots, the active jobs with their stages, tasks and
// input blocks, and the running task attempts with the progress their nodes
// last reported. It is what optd's Heartbeat RPC decides on: the server
// keeps one Ledger per cluster, builds the heartbeat policies' views from it
// ([Ledger.View]), applies their actions to it ([Ledger.Apply]) and learns
// completions from the executor ([Ledger.Finish]).
//
// The ledger follows the same rules as the cluster simulator (package sim):
// a start is refused unless the task is pending, its job active, a reduce's
// slow start reached and the ramp-up allows it, and the node has the
// resources and the typed slot; a task finishes with its first attempt and
// its other attempts are killed; a stage's end starts the next stage; grants
// beyond a request last one heartbeat of their node. A replay of a simulated
// cluster through optd's gRPC API therefore reproduces the simulation
// exactly (cmd/replay tests it).
//
// What the ledger does not know is time's effect on work: the progress of
// an attempt is what its node reported last ([Ledger.Report]), as in
// Hadoop's JobTracker and YARN's ResourceManager.
//
// Every change is one [Event] (a submission, a heartbeat's applied actions,
// a completion, a failure, a job's removal); replaying the events of a
// ledger into a fresh one ([Ledger.Replay]) rebuilds it, which is how the
// server restores a cluster from its durable event log.
package ledger

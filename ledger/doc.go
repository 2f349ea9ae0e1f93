// Package ledger is a scheduler's record of one cluster at task level: its
// nodes and their typed slots, the active jobs with their stages, tasks and
// input blocks, and the running task attempts with the progress their nodes
// last reported. A [Scheduler] couples it with a cluster's heartbeat
// pipeline: every heartbeat decision takes that one path, whether optd's
// Heartbeat RPC serves it, the cluster simulator (package sim) runs it in
// process, or `optd replay` drives a server with it. The ledger builds the
// policies' views ([Ledger.View]), applies their actions ([Ledger.Apply])
// and learns completions from the executor ([Ledger.Finish]).
//
// Its rules are those the simulator's executor follows too, since it
// carries out exactly what a ledger applied: a start is refused unless the
// task is pending, its job active, a reduce's slow start reached and the
// ramp-up allows it, and the node has the resources and the typed slot; a
// task finishes with its first attempt and its other attempts are killed; a
// stage's end starts the next stage; grants beyond a request last one
// heartbeat of their node. A replay of a simulated cluster through optd's
// gRPC API therefore reproduces the simulation exactly (cmd/replay tests
// it).
//
// What the ledger does not know is time's effect on work: the progress of
// an attempt is what its node reported last (Beat.Running), as in Hadoop's
// JobTracker and YARN's ResourceManager; progress is soft state, refreshed
// by every heartbeat and not made durable.
//
// Every change is one [Event] (a submission, a heartbeat's applied actions,
// a completion, a failure, a job's removal); replaying the events of a
// ledger into a fresh one ([Ledger.Replay]) rebuilds it, which is how the
// server restores a cluster from its durable event log.
package ledger

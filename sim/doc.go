// Package sim is optd's discrete-event simulation: one engine and the models
// built on it.
//
// # Engine (engine.go)
//
// Engine is a virtual clock and an indexed binary heap of events ordered by
// (time, scheduling order), with cancel and reschedule by handle. It holds
// no randomness and no model state, so that the reduce-placement queue and
// the cluster simulator share it. Randomness comes from
// seeded math/rand/v2 PCG streams (rng.go): one stream per source of
// randomness, so runs are reproducible and policies compared with common
// random numbers.
//
// # The reduce-placement queue (placement.go; docs/formats.md#placement-scenario)
//
// The "stable system" of Tan, Meng, Meng, Zhang, "Improving ReduceTask Data
// Locality for Sequential MapReduce Jobs" (INFOCOM 2013, §II, §III-B): jobs
// arrive (Poisson, rate λ), the map phases are served by K-limited processor
// sharing (Definition 1: with n jobs present, the min(n, K) oldest are in
// service, each at rate 1/min(n, K) of one unit of capacity; the others wait
// FIFO), map work B is Exp(μ). When job i enters service it is placed at once
// on R_i free reduce slots chosen by a policy.Placement and holds them until
// its map phase ends; its cost is Y_i·Σ_j H(σ_i(j)), Y_i = X_i/R_i. The
// figure of merit is the long-run mean cost per job that entered service,
// eq. (8)-(9): C̄ = lim (1/n)·Σ_{i≤n} Σ_j X_i^j·H(σ_i(j)). An optional finite
// waiting room (max_waiting) makes the state space finite: an arrival that
// finds max_waiting jobs waiting is lost. The cluster has at least K·r̄ slots
// (§II), so a job entering service always finds R free slots.
//
// Processor sharing is simulated exactly for any work distribution (not by
// memorylessness), so trace-driven works are right too: see Model.Run.
//
// Scenarios (scenario.go, source.go) are the JSON of docs/formats.md#placement-scenario, with an
// optional "trace" object that replays SWIM or Coflow traces (TraceSpec).
// Replications use seeds derived from the scenario's (ReplicationSeed); each
// replication runs every policy on the same arrivals, works and (X, R).
// Every run records the service interval [Start, End), Y and R of each job,
// which is what the hindsight lower bound of package mdp needs; those do not
// depend on the policy, since placement does not change the queue.
//
// # The cluster simulator (cluster_*.go; docs/formats.md#cluster-scenario)
//
// Nodes with resource vectors or MRv1 typed slots run the map and reduce
// tasks of a ClusterScenario (see its comment for the model). The
// simulator knows what a scheduler does not, the work of every task and
// time; what a scheduler knows and decides goes through a ControlPlane: in
// process, a ledger.Scheduler with the policy.Pipeline under test, the
// very path of optd's Heartbeat RPC; with `optd replay`, an optd server
// over gRPC. The simulator tells it of submissions, heartbeats with
// progress, completions and job ends, and carries out the actions of each
// decision.
package sim

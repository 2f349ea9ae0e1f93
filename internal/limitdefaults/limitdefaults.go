// Package limitdefaults holds the one copy of the default limits: the
// server's (server.DefaultLimits) and the configuration's (the values
// `optd serve --help` shows and that the config file and OPTD_LIMITS_*
// override) are built from these constants, so they cannot drift apart.
package limitdefaults

import "time"

const (
	// MaxRequestBytes bounds a request's encoded size (limits.max_request_bytes).
	MaxRequestBytes = 4 << 20
	// MaxSlots and MaxNodes bound one cluster (limits.max_slots, limits.max_nodes).
	MaxSlots = 100_000
	MaxNodes = 100_000
	// MaxClusters, MaxTotalNodes and MaxTotalSlots bound what the server
	// holds: 200 clusters of 100,000 slots took 1.8 GB, so the totals keep
	// the held state to a few hundred MB whatever the number of clusters.
	MaxClusters   = 1000
	MaxTotalNodes = 1_000_000
	MaxTotalSlots = 1_000_000
	// MaxTotalJobs, MaxClusterTasks and MaxTotalTasks bound the unfinished
	// jobs and their tasks, per heartbeat cluster and in total.
	MaxTotalJobs    = 1_000_000
	MaxClusterTasks = 2_000_000
	MaxTotalTasks   = 5_000_000
	// MaxJobs and MaxTasks bound one cluster's unfinished jobs and one
	// job's tasks.
	MaxJobs  = 100_000
	MaxTasks = 200_000
	// MaxSolveTime caps a solve's or a simulation's run time.
	MaxSolveTime = time.Minute
	// MaxSimulatedJobs bounds replications × jobs of one simulation.
	MaxSimulatedJobs = 10_000_000
	// MaxStartsPerHeartbeat bounds the tasks one heartbeat starts. YARN
	// leaves its per-heartbeat assignment unbounded by default; a node of
	// 1,000 containers is far beyond any NodeManager.
	MaxStartsPerHeartbeat = 1000
	// MaxMemoryMB bounds the memory a command-line computation is
	// estimated to need before it starts (the server bounds its work by
	// the other limits).
	MaxMemoryMB = 4096
)

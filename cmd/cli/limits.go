package cli

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"github.com/optd/optd/cmd/config"
	"github.com/optd/optd/sim"
)

// LimitKeys are the settings of the limits a verb that simulates a
// placement scenario checks before it starts (register them with
// config.AddFlags).
var LimitKeys = []string{config.KeyMaxSimulatedJobs, config.KeyMaxMemoryMB}

// bytesPerRecordedJob is what a replication keeps per arrival when it
// records its jobs for the hindsight bound: the record, up to as much again
// of slice growth, and the copy of the counted jobs the bound reads.
// Measured: 100 000 → 400 000 jobs (2 replications, run one after the
// other) raise the peak RSS of `optd bound` by 60 MB, 200 bytes per job;
// this is 216.
const bytesPerRecordedJob = 3 * int64(unsafe.Sizeof(sim.JobRecord{}))

// CheckPlacementWork refuses, before any of it runs, a placement scenario
// whose simulation would exceed the limits, as the server does: jobs ×
// replications over limits.max_simulated_jobs, or an estimated memory (the
// job records of the replications run at a time, kept when recorded: for
// the hindsight bound) over limits.max_memory_mb. parallel says whether the
// verb runs replications in parallel (one per core) or one after the
// other. The error gives the estimate and the setting that raises the
// limit.
func CheckPlacementWork(s *sim.Scenario, l config.Limits, recorded, parallel bool) error {
	atOnce := 1
	if parallel {
		atOnce = min(s.Replications, runtime.GOMAXPROCS(0))
	}
	need := int64(0)
	if recorded {
		need = int64(s.Jobs) * int64(atOnce) * bytesPerRecordedJob
	}
	reps := "replications"
	if atOnce == 1 {
		reps = "replication"
	}
	if err := CheckMemory(fmt.Sprintf("jobs = %d with %d %s at a time", s.Jobs, atOnce, reps), float64(need), l); err != nil {
		return err
	}
	if n := int64(s.Jobs) * int64(s.Replications); n > int64(l.MaxSimulatedJobs) {
		return fmt.Errorf("jobs × replications = %d × %d = %d, more than limits.max_simulated_jobs = %d allows (--max-simulated-jobs or OPTD_LIMITS_MAX_SIMULATED_JOBS raises it)",
			s.Jobs, s.Replications, n, l.MaxSimulatedJobs)
	}
	return nil
}

// CheckMemory refuses work whose estimated memory need (bytes) exceeds
// limits.max_memory_mb, naming the work (what), the estimate, the limit and
// how to raise it.
func CheckMemory(what string, need float64, l config.Limits) error {
	if need <= float64(int64(l.MaxMemoryMB)<<20) {
		return nil
	}
	return fmt.Errorf("%s needs about %s of memory, more than limits.max_memory_mb = %d allows (--max-memory-mb or OPTD_LIMITS_MAX_MEMORY_MB raises it)",
		what, formatBytes(int64(min(need, math.MaxInt64/2))), l.MaxMemoryMB)
}

func formatBytes(b int64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", float64(b)/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

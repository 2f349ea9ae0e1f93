//go:build unix

package solver

import (
	"syscall"
	"time"
)

// processCPUClock returns a reader of the CPU time the process has used
// (user and system, all threads) since the call.
func processCPUClock() (func() time.Duration, bool) {
	read := func() (time.Duration, bool) {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0, false
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
	}
	start, ok := read()
	if !ok {
		return nil, false
	}
	return func() time.Duration {
		t, _ := read()
		return t - start
	}, true
}

//go:build !unix

package solver

import "time"

// processCPUClock has no CPU clock outside Unix: the work clock falls
// back to the wall clock.
func processCPUClock() (func() time.Duration, bool) { return nil, false }

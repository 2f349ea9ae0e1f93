package store

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkFdatasync measures the disk under the store: one 4 KiB page
// rewritten and fdatasynced per iteration, as bbolt does twice per commit
// (data pages, then the meta page). It reports the p50, p99 and p999
// latency of the write+sync, the floor of a group commit's duration.
func BenchmarkFdatasync(b *testing.B) {
	f, err := os.Create(filepath.Join(b.TempDir(), "sync"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := make([]byte, 4096)
	if _, err := f.Write(page); err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		page[0] = byte(i)
		start := time.Now()
		if _, err := f.WriteAt(page, 0); err != nil {
			b.Fatal(err)
		}
		if err := datasync(f); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1e3 }
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(q(0.999), "p999_ms")
}

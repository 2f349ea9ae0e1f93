//go:build !linux

package store

import "os"

// datasync flushes f (fsync where fdatasync is not available).
func datasync(f *os.File) error { return f.Sync() }

// preallocate does nothing where fallocate is not available: the log
// grows with each record instead.
func preallocate(f *os.File, size int64) error { return nil }

//go:build !linux

package store

import "github.com/cockroachdb/pebble/v2/vfs"

// preallocate writes f's first size bytes as zeros (see the Linux version).
func preallocate(f vfs.File, size int64) error { return writeZeros(f, size) }

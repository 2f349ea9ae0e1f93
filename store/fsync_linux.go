package store

import (
	"errors"
	"os"
	"syscall"
)

// datasync flushes f's data and the metadata needed to read it back
// (fdatasync(2): its size, not its times).
func datasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

// preallocate allocates f's first size bytes (zeros until written) and
// makes the allocation durable, so that writes within them change no
// metadata that fdatasync must commit. Where the file system cannot
// (EOPNOTSUPP) or has no room (ENOSPC), the file grows with its writes
// instead: slower syncs, not a refusal to run.
func preallocate(f *os.File, size int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSPC) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Sync()
}

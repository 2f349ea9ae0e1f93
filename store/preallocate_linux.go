package store

import (
	"errors"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// preallocate allocates f's first size bytes (zeros until written) and
// extends its size to them, so that writes within them change no metadata
// an fdatasync must commit. Where the file system cannot (EOPNOTSUPP) or
// the file has no descriptor (an in-memory file system), the zeros are
// written.
func preallocate(f vfs.File, size int64) error {
	if fd := f.Fd(); fd != vfs.InvalidFd {
		err := syscall.Fallocate(int(fd), 0, 0, size)
		if !errors.Is(err, syscall.EOPNOTSUPP) {
			return err
		}
	}
	return writeZeros(f, size)
}

// Package testenv gives tests the environment they share: where the public
// traces of ../shared/data are, and how to skip cleanly when they are absent.
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the directory holding go.mod above the working directory
// (a test's package directory), skipping the test when there is none.
func ModuleRoot(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Skip("no go.mod above the package directory; cannot locate ../shared/data")
		}
		dir = parent
	}
}

// SharedData returns the path of ../shared/data next to the module root,
// skipping the test with a clear message when it is absent.
func SharedData(tb testing.TB) string {
	tb.Helper()
	data := filepath.Join(ModuleRoot(tb), "..", "shared", "data")
	if _, err := os.Stat(data); err != nil {
		tb.Skipf("trace data directory %s is absent (see ../shared/data/README.md): %v", data, err)
	}
	return data
}

// SharedFile returns the path of a file under ../shared/data, skipping the test
// when it is absent.
func SharedFile(tb testing.TB, rel string) string {
	tb.Helper()
	path := filepath.Join(SharedData(tb), rel)
	if _, err := os.Stat(path); err != nil {
		tb.Skipf("trace file %s is absent (see ../shared/data/README.md): %v", path, err)
	}
	return path
}

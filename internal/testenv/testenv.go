// Package testenv gives tests the environment they share: the module root and
// the public traces shipped in its data/ directory (see data/README.md).
package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// ModuleRoot returns the directory holding go.mod above the working directory
// (a test's package directory).
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
			tb.Fatal("no go.mod above the package directory; cannot locate the data/ directory")
		}
		dir = parent
	}
}

// TraceData returns the path of the repository's data/ directory, which holds
// the public traces. The traces are part of the repository, so a missing
// directory fails the test instead of skipping it.
func TraceData(tb testing.TB) string {
	tb.Helper()
	data := filepath.Join(ModuleRoot(tb), "data")
	if _, err := os.Stat(data); err != nil {
		tb.Fatalf("trace data directory %s is missing (it is part of the repository): %v", data, err)
	}
	return data
}

// TraceFile returns the path of a file under data/, failing the test when it
// is missing.
func TraceFile(tb testing.TB, rel string) string {
	tb.Helper()
	path := filepath.Join(TraceData(tb), rel)
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("trace file %s is missing (it is part of the repository): %v", path, err)
	}
	return path
}

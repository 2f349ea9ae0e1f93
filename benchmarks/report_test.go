package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/optd/optd/internal/testenv"
)

// TestQuickReport runs the whole report in quick mode into a temporary
// directory: CI checks that it runs and writes every file, not its numbers.
// Sections needing cbc, glpsol or the traces skip themselves when those are
// absent (the report then says so).
func TestQuickReport(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick report takes about 10 s (30 s with -race); skipped with -short")
	}
	out := t.TempDir()
	data := filepath.Join(testenv.ModuleRoot(t), "..", "shared", "data")
	var log strings.Builder
	err := Run(context.Background(), Config{Quick: true, OutDir: out, DataDir: data, Log: &log, Command: "go test"})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Sections() {
		if !strings.Contains(string(md), "### "+s.Title) {
			t.Errorf("RESULTS.md has no section %q", s.Title)
		}
	}
	for _, want := range []string{"| CPU |", "seed 1"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("RESULTS.md does not state %q", want)
		}
	}
	if strings.Contains(string(md), "This section failed") {
		t.Errorf("a section failed:\n%s", md)
	}
	// Every figure and raw file the report links to exists.
	for _, line := range strings.Split(string(md), "\n") {
		for _, prefix := range []string{"](figures/", "](raw/"} {
			if i := strings.Index(line, prefix); i >= 0 {
				rel := line[i+2:]
				rel = rel[:strings.IndexByte(rel, ')')]
				if _, err := os.Stat(filepath.Join(out, rel)); err != nil {
					t.Errorf("linked file %s: %v", rel, err)
				}
			}
		}
	}
	t.Logf("progress log:\n%s", log.String())
}

func TestSections(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Sections() {
		if seen[s.Name] || s.Name == "" || s.Title == "" || s.Run == nil {
			t.Errorf("section %+v: empty field or duplicate name", s.Name)
		}
		seen[s.Name] = true
		if !strings.Contains(strings.Join(groups, "|"), s.Group) {
			t.Errorf("section %s: unknown group %q", s.Name, s.Group)
		}
	}
	if _, err := selectSections(Sections(), []string{"placement-fig9", "nope"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown section: err = %v, want one naming it", err)
	}
	if err := Run(context.Background(), Config{}); err == nil {
		t.Error("Run without OutDir: no error")
	}
}

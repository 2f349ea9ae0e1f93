package benchmarks

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/internal/testenv"
)

// raceSections are the sections TestQuickReport runs under the race
// detector: placement-network's runs go to a pool of goroutines
// (runPlacements), the only concurrency of the report's own code; the
// other sections call packages whose tests run under the race detector
// themselves.
var raceSections = []string{"placement-network"}

// TestQuickReport runs the whole report in quick mode into a temporary
// directory: CI checks that it runs and writes every file, not its numbers.
// Sections needing cbc, glpsol or the traces skip themselves when those are
// absent (the report then says so). It takes about 50 s on 2 loaded cores;
// under the race detector about 300 s, so there it runs its light form:
// raceSections only, the report's own concurrent code (scripts/test.sh
// runs the whole quick report again without the race detector).
func TestQuickReport(t *testing.T) {
	if testing.Short() {
		t.Skip("the quick report takes about 50 s; skipped with -short")
	}
	out := t.TempDir()
	data := testenv.TraceData(t)
	var log strings.Builder
	cfg := Config{Quick: true, OutDir: out, DataDir: data, Log: &log, Command: "go test"}
	if raceEnabled {
		cfg.Only = raceSections
	}
	err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "RESULTS.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range Sections() {
		if cfg.Only != nil && !slices.Contains(cfg.Only, s.Name) {
			continue
		}
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

// TestSpliceSections: rerunning some sections (--only) replaces their
// blocks in the existing report, the last one included, and leaves every
// other byte as it was.
func TestSpliceSections(t *testing.T) {
	env := &Env{start: time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)}
	sec := func(name, title, group string) Section { return Section{Name: name, Title: title, Group: group} }
	a, b, c := sec("a", "Section A", GroupReproduction), sec("b", "Section B", GroupPerformance), sec("c", "Section C", GroupTraces)
	result := func(s Section, body string) sectionResult {
		return sectionResult{sec: s, out: &Output{Markdown: body}, elapsed: time.Second}
	}
	old := renderReport(env, []sectionResult{result(a, "old a"), result(b, "old b"), result(c, "old c")}, time.Minute)
	got, ok := spliceSections(old, env, []sectionResult{result(b, "new b\n\nsecond paragraph"), result(c, "new c")})
	if !ok {
		t.Fatal("sections not found in the report")
	}
	want := renderReport(env, []sectionResult{result(a, "old a"), result(b, "new b\n\nsecond paragraph"), result(c, "new c")}, time.Minute)
	note := ", recomputed on 2026-11-24 after the rest of this report"
	wantS := strings.ReplaceAll(string(want), "computed in 1.0 s; rerun alone with `go run ./benchmarks/cmd/report --only b`",
		"computed in 1.0 s"+note+"; rerun alone with `go run ./benchmarks/cmd/report --only b`")
	wantS = strings.ReplaceAll(wantS, "computed in 1.0 s; rerun alone with `go run ./benchmarks/cmd/report --only c`",
		"computed in 1.0 s"+note+"; rerun alone with `go run ./benchmarks/cmd/report --only c`")
	if string(got) != wantS {
		t.Errorf("spliced report:\n%s\nwant:\n%s", got, wantS)
	}
	// A section the report lacks joins the end of its group; a group the
	// report lacks is added in the order of groups; nothing else changes.
	d, e := sec("d", "Section D", GroupReproduction), sec("e", "Section E", GroupPerformance)
	onlyAC := renderReport(env, []sectionResult{result(a, "old a"), result(c, "old c")}, time.Minute)
	got, ok = spliceSections(onlyAC, env, []sectionResult{result(d, "new d"), result(e, "new e")})
	if !ok {
		t.Fatal("new sections not added to the report")
	}
	want = renderReport(env, []sectionResult{result(a, "old a"), result(d, "new d"), result(e, "new e"), result(c, "old c")}, time.Minute)
	wantS = string(want)
	for _, name := range []string{"d", "e"} {
		wantS = strings.ReplaceAll(wantS, "computed in 1.0 s; rerun alone with `go run ./benchmarks/cmd/report --only "+name+"`",
			"computed in 1.0 s"+note+"; rerun alone with `go run ./benchmarks/cmd/report --only "+name+"`")
	}
	if string(got) != wantS {
		t.Errorf("report with new sections:\n%s\nwant:\n%s", got, wantS)
	}
	// A section whose title changed replaces its old block (found by the
	// footer's --only NAME), not joins the report beside it.
	b2 := sec("b", "Section B, retitled", GroupPerformance)
	got, ok = spliceSections(old, env, []sectionResult{result(b2, "new b")})
	if !ok {
		t.Fatal("retitled section not spliced")
	}
	want = renderReport(env, []sectionResult{result(a, "old a"), result(b2, "new b"), result(c, "old c")}, time.Minute)
	wantS = strings.ReplaceAll(string(want), "computed in 1.0 s; rerun alone with `go run ./benchmarks/cmd/report --only b`",
		"computed in 1.0 s"+note+"; rerun alone with `go run ./benchmarks/cmd/report --only b`")
	if string(got) != wantS {
		t.Errorf("report with a retitled section:\n%s\nwant:\n%s", got, wantS)
	}
	// A rerun skipped here (or failed) keeps the report's block.
	skipped := sectionResult{sec: b, err: Skipf("no peer"), elapsed: time.Second}
	if got, ok = spliceSections(old, env, []sectionResult{skipped}); !ok || string(got) != string(old) {
		t.Errorf("a skipped rerun changed the report:\n%s", got)
	}
	if _, ok := spliceSections([]byte("not a report\n"), env, []sectionResult{result(d, "d")}); ok {
		t.Error("a file without group headings was spliced into")
	}
}

package benchmarks

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"

	_ "github.com/optd/optd/policy/builtin" // every policy the sections name
)

// Groups of sections, in the order the report shows them.
const (
	GroupReproduction = "Reproduction of the papers"
	GroupPerformance  = "Performance"
	GroupTraces       = "Real traces"
)

// groups is the order of the groups in RESULTS.md.
var groups = []string{GroupReproduction, GroupPerformance, GroupTraces}

// DefaultSeed is the seed of every random choice of the report unless
// Config.Seed says otherwise.
const DefaultSeed = 1

// Config is one run of the report.
type Config struct {
	// Quick shrinks every experiment so that the report runs in under 3
	// minutes on 2 cores (CI); the full report takes under 30.
	Quick bool
	// OutDir receives RESULTS.md, figures/ and raw/ (benchmarks/ when run
	// by make bench).
	OutDir string
	// DataDir holds the public traces (the repository's data/); the trace
	// sections are skipped when it is absent.
	DataDir string
	// Seed seeds every random choice (0 means DefaultSeed).
	Seed uint64
	// Only, when not empty, runs only the sections with these names.
	Only []string
	// Log receives progress lines (stderr); nil discards them.
	Log io.Writer
	// Command is the command line to print as the way to rerun the report.
	Command string
}

// Section is one part of the report: Run computes it and returns its
// Markdown, figures and raw benchmark results.
type Section struct {
	// Name identifies the section (--only, the raw file raw/NAME.txt).
	Name string
	// Title is its heading; Group the group it belongs to.
	Title, Group string
	Run          func(ctx context.Context, env *Env) (*Output, error)
}

// Output is what a section produces.
type Output struct {
	// Markdown is the body of the section (without its heading).
	Markdown string
	// Figures are saved as figures/NAME.png and figures/NAME.svg and shown
	// after the Markdown.
	Figures []Figure
	// Bench are the section's benchmark results, written to raw/NAME.txt in
	// the `go test -bench` format (benchstat reads it).
	Bench []BenchResult
}

// Figure is a plot to save under figures/.
type Figure struct {
	Name, Caption string
	Plot          *plot.Plot
}

// SkipError says why a section cannot run on this machine (a missing peer
// binary, absent trace data); the report shows the reason.
type SkipError struct{ Reason string }

func (e *SkipError) Error() string { return "skipped: " + e.Reason }

// Skipf returns a *SkipError.
func Skipf(format string, args ...any) error {
	return &SkipError{Reason: fmt.Sprintf(format, args...)}
}

// Env is what a section sees of the run.
type Env struct {
	Config
	Machine Machine
	start   time.Time
	section string
}

// Logf writes a progress line to the log, prefixed by the elapsed time and
// the current section.
func (e *Env) Logf(format string, args ...any) {
	if e.Log == nil {
		return
	}
	fmt.Fprintf(e.Log, "[%6.1fs] %s: %s\n", time.Since(e.start).Seconds(), e.section, fmt.Sprintf(format, args...))
}

// Pick returns quick in quick mode and full otherwise.
func Pick[T any](e *Env, quick, full T) T {
	if e.Quick {
		return quick
	}
	return full
}

// sectionResult is the outcome of one section.
type sectionResult struct {
	sec     Section
	out     *Output
	err     error
	elapsed time.Duration
}

// Run computes the selected sections and writes OutDir/RESULTS.md,
// OutDir/figures/ and OutDir/raw/. A section that fails is reported in
// RESULTS.md and makes Run return an error after every other section ran;
// a skipped section (SkipError) is not an error.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Seed == 0 {
		cfg.Seed = DefaultSeed
	}
	if cfg.OutDir == "" {
		return errors.New("benchmarks: Config.OutDir is empty")
	}
	secs, err := selectSections(Sections(), cfg.Only)
	if err != nil {
		return err
	}
	figDir, rawDir := filepath.Join(cfg.OutDir, "figures"), filepath.Join(cfg.OutDir, "raw")
	for _, d := range []string{figDir, rawDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("benchmarks: %w", err)
		}
	}
	env := &Env{Config: cfg, start: time.Now(), section: "report"}
	env.Machine = DescribeMachine(ctx)
	env.Logf("machine: %s", env.Machine.CPU)
	results := make([]sectionResult, 0, len(secs))
	var failed []string
	for _, s := range secs {
		if err := ctx.Err(); err != nil {
			return err
		}
		env.section = s.Name
		env.Logf("start")
		t0 := time.Now()
		out, err := s.Run(ctx, env)
		r := sectionResult{sec: s, out: out, err: err, elapsed: time.Since(t0)}
		var skip *SkipError
		switch {
		case errors.As(err, &skip):
			env.Logf("%v", err)
		case err != nil:
			env.Logf("FAILED: %v", err)
			failed = append(failed, fmt.Sprintf("%s: %v", s.Name, err))
		default:
			if err := saveOutput(s.Name, out, figDir, rawDir, env.Machine); err != nil {
				return err
			}
			env.Logf("done in %.1f s", r.elapsed.Seconds())
		}
		results = append(results, r)
	}
	env.section = "report"
	path := filepath.Join(cfg.OutDir, "RESULTS.md")
	md := renderReport(env, results, time.Since(env.start))
	if len(cfg.Only) > 0 {
		// Rerunning some sections updates them in the existing report.
		if old, err := os.ReadFile(path); err == nil {
			if spliced, ok := spliceSections(old, env, results); ok {
				md = spliced
			}
		}
	}
	if err := os.WriteFile(path, md, 0o644); err != nil {
		return fmt.Errorf("benchmarks: %w", err)
	}
	env.Logf("wrote %s in %.1f s", path, time.Since(env.start).Seconds())
	if len(failed) > 0 {
		return fmt.Errorf("benchmarks: %d section(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// selectSections keeps the sections named in only (all when empty),
// rejecting unknown names.
func selectSections(all []Section, only []string) ([]Section, error) {
	if len(only) == 0 {
		return all, nil
	}
	byName := map[string]Section{}
	var names []string
	for _, s := range all {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	var out []Section
	for _, n := range only {
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("benchmarks: --only: unknown section %q (known: %s)", n, strings.Join(names, ", "))
		}
		out = append(out, s)
	}
	return out, nil
}

// saveOutput writes a section's figures and raw benchmark file.
func saveOutput(name string, out *Output, figDir, rawDir string, m Machine) error {
	if out == nil {
		return fmt.Errorf("benchmarks: section %s returned no output", name)
	}
	for _, f := range out.Figures {
		if err := saveFigure(f, figDir); err != nil {
			return fmt.Errorf("benchmarks: section %s: figure %s: %w", name, f.Name, err)
		}
	}
	if len(out.Bench) == 0 {
		return nil
	}
	var b bytes.Buffer
	writeBenchHeader(&b, m)
	for _, r := range out.Bench {
		b.WriteString(r.Line(m.Cores))
		b.WriteByte('\n')
	}
	return os.WriteFile(filepath.Join(rawDir, name+".txt"), b.Bytes(), 0o644)
}

// renderSection lays out one section: its heading, body, figures and raw
// lines, and a line saying how long it took and how to rerun it (note, if
// any, is added to that line).
func renderSection(env *Env, r sectionResult, note string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "### %s\n\n", r.sec.Title)
	var skip *SkipError
	switch {
	case errors.As(r.err, &skip):
		fmt.Fprintf(&b, "*Skipped on this machine: %s.*\n", skip.Reason)
		return b.Bytes()
	case r.err != nil:
		fmt.Fprintf(&b, "**This section failed:** `%v`\n", r.err)
		return b.Bytes()
	}
	b.WriteString(strings.TrimRight(r.out.Markdown, "\n"))
	b.WriteString("\n")
	for _, f := range r.out.Figures {
		fmt.Fprintf(&b, "\n![%s](figures/%s.svg)\n\n*%s* ([PNG](figures/%s.png))\n", f.Caption, f.Name, f.Caption, f.Name)
	}
	if len(r.out.Bench) > 0 {
		fmt.Fprintf(&b, "\nRaw benchmark lines: [`raw/%s.txt`](raw/%s.txt).\n", r.sec.Name, r.sec.Name)
	}
	fmt.Fprintf(&b, "\n<sub>Section computed in %.1f s%s; rerun alone with `go run ./benchmarks/cmd/report --only %s%s`.</sub>\n",
		r.elapsed.Seconds(), note, r.sec.Name, map[bool]string{true: " --quick", false: ""}[env.Quick])
	return b.Bytes()
}

// spliceSections replaces, in an existing report, the block of each
// section just rerun (from its "### Title" line to the next "## " or "### "
// heading) by its new rendering, so that `--only` updates RESULTS.md
// instead of replacing it. A section the report does not have yet (a new
// one) is added at the end of its group, the group's heading too if the
// report has none: rerunning one section never drops the others. ok is
// false only if the report has no group heading at all (not a report).
func spliceSections(old []byte, env *Env, results []sectionResult) (out []byte, ok bool) {
	lines := strings.SplitAfter(string(old), "\n")
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "## ") }) {
		return nil, false
	}
	note := fmt.Sprintf(", recomputed on %s after the rest of this report", env.start.UTC().Format("2006-01-02"))
	for _, r := range results {
		block := string(renderSection(env, r, note))
		i := sectionStart(lines, r.sec)
		if i >= 0 && r.err != nil {
			// A rerun that was skipped (a peer missing here) or failed
			// keeps the figures the report has: they are still the last
			// measured ones, which "skipped" would throw away.
			env.Logf("%s: kept the report's section (this run: %v)", r.sec.Name, r.err)
			continue
		}
		if i < 0 {
			lines = insertSection(lines, r.sec.Group, block)
			continue
		}
		j := nextHeading(lines, i+1, "## ", "### ")
		if j < len(lines) {
			block += "\n"
		}
		lines = slices.Concat(lines[:i], []string{block}, lines[j:])
	}
	return []byte(strings.Join(lines, "")), true
}

// sectionStart is the index of the "### " heading of sec's block in a
// report's lines: the line "### Title", or else, for a section whose title
// has changed since the report was written, the heading above the footer
// that names it (its "--only NAME" rerun command); -1 if the report lacks it.
func sectionStart(lines []string, sec Section) int {
	if i := slices.Index(lines, "### "+sec.Title+"\n"); i >= 0 {
		return i
	}
	footer := regexp.MustCompile("rerun alone with `go run ./benchmarks/cmd/report --only " + regexp.QuoteMeta(sec.Name) + "( --quick)?`")
	for f, l := range lines {
		if !strings.HasPrefix(l, "<sub>") || !footer.MatchString(l) {
			continue
		}
		for i := f - 1; i >= 0; i-- {
			if strings.HasPrefix(lines[i], "### ") {
				return i
			}
			if strings.HasPrefix(lines[i], "## ") {
				break
			}
		}
	}
	return -1
}

// insertSection adds a section's block at the end of its group in a
// report's lines, with the group's heading, placed in the order of groups,
// if the report lacks it.
func insertSection(lines []string, group, block string) []string {
	at := func(k int) int { // before the blank line that precedes a heading
		if k > 0 && k < len(lines) && lines[k-1] == "\n" {
			return k - 1
		}
		return k
	}
	if g := slices.Index(lines, "## "+group+"\n"); g >= 0 {
		k := at(nextHeading(lines, g+1, "## "))
		return slices.Concat(lines[:k], []string{"\n", block}, lines[k:])
	}
	later := slices.Index(groups, group) + 1
	k := len(lines)
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") && !slices.Contains(groups[:later], strings.TrimSuffix(l[3:], "\n")) {
			k = at(i)
			break
		}
	}
	return slices.Concat(lines[:k], []string{"\n## " + group + "\n", "\n", block}, lines[k:])
}

// nextHeading is the index of the first line at or after from that starts
// with one of prefixes (len(lines) if none).
func nextHeading(lines []string, from int, prefixes ...string) int {
	for j := from; j < len(lines); j++ {
		for _, p := range prefixes {
			if strings.HasPrefix(lines[j], p) {
				return j
			}
		}
	}
	return len(lines)
}

// renderReport lays out RESULTS.md.
func renderReport(env *Env, results []sectionResult, total time.Duration) []byte {
	var b bytes.Buffer
	mode := "full"
	if env.Quick {
		mode = "quick (--quick: smaller experiments; numbers are indicative only)"
	}
	fmt.Fprintf(&b, "# optd: reproduction and performance report\n\n")
	fmt.Fprintf(&b, "Generated by `%s` (mode: %s, seed %d) in %.0f s. ", env.Command, mode, env.Seed, total.Seconds())
	fmt.Fprintf(&b, "Every number below was computed by that command on the machine described here; ")
	fmt.Fprintf(&b, "rerun it to regenerate this file, `figures/` and `raw/` (benchstat-ready `go test -bench` lines).\n\n")
	b.WriteString(env.Machine.Markdown())
	for _, g := range groups {
		var in []sectionResult
		for _, r := range results {
			if r.sec.Group == g {
				in = append(in, r)
			}
		}
		if len(in) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## %s\n", g)
		for _, r := range in {
			b.WriteString("\n")
			b.Write(renderSection(env, r, ""))
		}
	}
	if p := pendingMarkdown(); p != "" {
		fmt.Fprintf(&b, "\n## Not reproduced yet\n\n%s", p)
	}
	return b.Bytes()
}

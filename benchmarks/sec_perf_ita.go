package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/optd/optd/solver"
)

// itaCase is one instance of the ITA comparison.
type itaCase struct {
	family string
	seed   int
	in     *solver.Instance
}

func (c itaCase) name() string { return fmt.Sprintf("%s-%d", c.family, c.seed) }

// itaCases are the instances of the ITA comparison: the HaSTE tables and
// every family of the robustness suite (solver.Families) with seeds
// 0..itaSeeds−1.
func itaCases(env *Env) ([]itaCase, error) {
	seeds, err := itaSeeds(env)
	if err != nil {
		return nil, err
	}
	var out []itaCase
	for i, n := range solver.BuiltinNames() {
		in, err := solver.BuiltinInstance(n)
		if err != nil {
			return nil, err
		}
		out = append(out, itaCase{"haste-tables", i, in})
	}
	for _, f := range solver.Families() {
		for seed := range seeds {
			out = append(out, itaCase{f.Name, seed, f.Instance(uint64(seed))})
		}
	}
	return out, nil
}

// itaSeeds is the number of seeds per family: FamilySeeds (quick mode: 1),
// or OPTD_ITA_SEEDS (1..FamilySeeds) for a partial full-mode comparison
// (the whole suite with the peers takes over an hour on a shared machine;
// make ita-compare runs the first seeds).
func itaSeeds(env *Env) (int, error) {
	s := os.Getenv("OPTD_ITA_SEEDS")
	if s == "" {
		return Pick(env, 1, solver.FamilySeeds), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > solver.FamilySeeds {
		return 0, fmt.Errorf("OPTD_ITA_SEEDS = %q: want a number of seeds in 1..%d", s, solver.FamilySeeds)
	}
	return n, nil
}

// itaRun is one solver's outcome on one instance.
type itaRun struct {
	proven    bool
	seconds   float64 // optd: mean over repeated runs; peers: the solver's own time
	objective float64 // the incumbent (at the limit when not proven), checked by solver.CheckCounts
	status    string
	// refuted: a peer claimed this objective optimal, below the value of
	// optd's checked assignment (proven is then false)
	refuted bool
	// invalid says why a peer's answer is no solution: its counts break a
	// row (objective 0, proven false)
	invalid string
}

// itaRow is one instance's outcomes: optd, CBC, HiGHS.
type itaRow struct {
	c               itaCase
	optd, cbc, hgs  itaRun
	bound           float64 // optd's proven bound
	haveCBC, haveHS bool
}

// fasterPeer returns the time of the faster peer that proved the optimum
// and whether one did.
func (r itaRow) fasterPeer() (float64, bool) {
	t, ok := math.Inf(1), false
	if r.haveCBC && r.cbc.proven {
		t, ok = math.Min(t, r.cbc.seconds), true
	}
	if r.haveHS && r.hgs.proven {
		t, ok = math.Min(t, r.hgs.seconds), true
	}
	return t, ok
}

// perfITA runs optd's exact ITA, `cbc -threads 1` and HiGHS (WebAssembly,
// single-threaded) on every instance of the robustness suite in the same
// run, with the same time limit, and reports per family the proven counts,
// the time distributions and the incumbents at the limit, and per
// instance optd's time against the faster peer. Every answer is checked
// against the instance by solver.CheckCounts: no peer may find a solution
// above optd's proven bound, and optd's answer must be an assignment worth
// its objective (either is an error of the section); a peer's answer that
// breaks a row is no solution, and a peer's claimed optimum below the
// value of optd's checked assignment is refuted (HiGHS 1.15 claimed one on
// memory-only-17001, 256 below CBC's and optd's optimum): neither counts as
// proven, and the summary lists them.
func perfITA(ctx context.Context, env *Env) (*Output, error) {
	if env.Machine.CBC == "" {
		return nil, Skipf("cbc (Debian coinor-cbc) is not on PATH; run scripts/setup.sh --bench")
	}
	if err := errNoHiGHS(); err != nil {
		return nil, err
	}
	limit := Pick(env, time.Second, 10*time.Second)
	minTime := Pick(env, 20*time.Millisecond, 100*time.Millisecond)
	cases, err := itaCases(env)
	if err != nil {
		return nil, err
	}
	seeds, _ := itaSeeds(env) // checked by itaCases
	dir, err := os.MkdirTemp("", "optd-bench-ita")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var rows []itaRow
	var bench []BenchResult
	for _, c := range cases {
		row, br, err := runITACase(ctx, env, dir, c, limit, minTime)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name(), err)
		}
		rows = append(rows, row)
		bench = append(bench, br...)
		env.Logf("%s: optd %.3gs (%v), cbc %.3gs (%v), highs %.3gs (%v)", c.name(),
			row.optd.seconds, row.optd.proven, row.cbc.seconds, row.cbc.proven, row.hgs.seconds, row.hgs.proven)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Every instance of the robustness suite (`solver.Families`: %d families, seeds 0–%d, drawn from seeded PCG "+
		"streams; plus the four HaSTE tables) is solved in the same run by optd's exact method (in process), by CBC %s "+
		"(`cbc FILE -threads 1 -sec %g -solve`) and by HiGHS %s (the `highs` npm package, WebAssembly, single-threaded, "+
		"run by Node.js %s with `mip_rel_gap = mip_abs_gap = 0`), each with the time limit %s and one thread, on the "+
		"same compact integer program (`solver.WriteLP`). optd's time is the mean of repeated runs of at least %s; the "+
		"peers' times are their own (CBC's wall clock, HiGHS's `solve()` call), which leaves out their process start "+
		"and so favours them. Every answer is checked against the instance (`solver.CheckCounts`): a peer's answer whose "+
		"counts break a row is no solution, and a peer's claimed optimum below the value of optd's checked assignment is "+
		"refuted; neither counts as proven. The machine is shared: times are noisy; ratios within one run are what compares.\n\n",
		len(solver.Families()), seeds-1, env.Machine.CBC, limit.Seconds(), highsVersion(), nodeVersion(ctx),
		limit, minTime)
	b.WriteString(itaFamilyTable(rows, limit))
	b.WriteString(itaSummary(rows, limit))
	return &Output{Markdown: b.String(), Bench: bench}, nil
}

// runITACase solves one instance with the three solvers and checks their
// agreement.
func runITACase(ctx context.Context, env *Env, dir string, c itaCase, limit, minTime time.Duration) (itaRow, []BenchResult, error) {
	row := itaRow{c: c}
	lpFile := filepath.Join(dir, c.name()+".lp")
	if err := writeFileWith(lpFile, func(w io.Writer) error { return solver.WriteLP(w, c.in) }); err != nil {
		return row, nil, err
	}
	var ex *solver.Result
	be, err := Measure(ctx, "ITA/instance="+c.name()+"/solver=optd", minTime, 1000, func(ctx context.Context) ([]Metric, error) {
		var err error
		ex, err = solver.Exact(ctx, c.in, solver.Options{TimeLimit: limit})
		if err != nil {
			return nil, err
		}
		return []Metric{{Value: ex.Objective, Unit: "objective"}, {Value: b2f(ex.Optimal), Unit: "proven"}}, nil
	})
	if err != nil {
		return row, nil, err
	}
	// optd's assignment checked by a second method: its value is then a
	// proven lower bound on the optimum, which refutes any peer's claimed
	// optimum below it
	if v, err := solver.CheckResult(c.in, ex); err != nil {
		return row, nil, fmt.Errorf("optd's answer: %w", err)
	} else if !sameObjective(v, ex.Objective) {
		return row, nil, fmt.Errorf("optd's answer: objective %v, assignment worth %v", ex.Objective, v)
	}
	row.optd = itaRun{proven: ex.Optimal, seconds: be.Seconds(), objective: ex.Objective, status: string(ex.Stats.Stopped)}
	row.bound = ex.UpperBound
	bench := []BenchResult{be}
	peer := func(name string, run func(context.Context, string, time.Duration) (*PeerResult, error)) (itaRun, error) {
		r, err := run(ctx, lpFile, limit)
		if err != nil {
			return itaRun{}, err
		}
		out, err := judgePeer(c.in, ex, r)
		if err != nil {
			return out, fmt.Errorf("%s: %w", name, err)
		}
		bench = append(bench, BenchResult{Name: "ITA/instance=" + c.name() + "/solver=" + name, N: 1, NsPerOp: out.seconds * 1e9,
			Metrics: []Metric{{Value: out.objective, Unit: "objective"}, {Value: b2f(out.proven), Unit: "proven"}}})
		return out, nil
	}
	if row.cbc, err = peer("cbc", RunCBC); err != nil {
		return row, nil, err
	}
	row.haveCBC = true
	if row.hgs, err = peer("highs", RunHiGHS); err != nil {
		return row, nil, err
	}
	row.haveHS = true
	return row, bench, nil
}

// judgePeer checks a peer's answer r against the instance and against
// optd's checked answer ex: the peer's counts (solver.LPCounts) must be an
// assignment (solver.CheckCounts), else the answer is no solution; a
// solution worth more than optd's proven bound is an error (one of the
// two is wrong, and the peer's counts are checked); a claimed optimum
// below ex's objective is refuted. A peer's proven optimum above ex's
// objective where optd proved it is above that bound too.
func judgePeer(in *solver.Instance, ex *solver.Result, r *PeerResult) (itaRun, error) {
	x, err := solver.LPCounts(in, r.Values)
	if err != nil {
		return itaRun{}, err
	}
	sec := r.SolveTime.Seconds()
	if sec == 0 {
		sec = r.Elapsed.Seconds()
	}
	out := itaRun{proven: r.Optimal, seconds: sec, status: r.Status}
	if out.objective, err = solver.CheckCounts(in, x); err != nil {
		out.invalid, out.proven, out.objective = err.Error(), false, 0
	}
	if out.objective > ex.UpperBound+1e-6*math.Max(1, ex.UpperBound) {
		return out, fmt.Errorf("found %v above optd's proven bound %v", out.objective, ex.UpperBound)
	}
	if out.proven && ex.Objective > out.objective && !sameObjective(out.objective, ex.Objective) {
		out.proven, out.refuted = false, true
	}
	return out, nil
}

// sameObjective compares two proven optima (sums of task values) up to
// floating-point rounding.
func sameObjective(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// itaFamilyTable is the per-family table: proven counts, median and
// maximum times, and the incumbents where a solver stopped at the limit.
func itaFamilyTable(rows []itaRow, limit time.Duration) string {
	t := newTable("family", "instances", "optd proven", "optd median / max", "CBC proven", "CBC median / max",
		"HiGHS proven", "HiGHS median / max", "where a solver stopped: optd's incumbent vs CBC / HiGHS (≥, <)",
		"optd ≤ faster peer", "faster peer / optd (geo. mean)")
	var families []string
	for _, r := range rows {
		if !slices.Contains(families, r.c.family) {
			families = append(families, r.c.family)
		}
	}
	for _, fam := range families {
		var fr []itaRow
		for _, r := range rows {
			if r.c.family == fam {
				fr = append(fr, r)
			}
		}
		stat := func(get func(itaRow) itaRun) (int, string) {
			var ts []float64
			proven := 0
			for _, r := range fr {
				ts = append(ts, get(r).seconds)
				if get(r).proven {
					proven++
				}
			}
			slices.Sort(ts)
			return proven, fmt.Sprintf("%s / %s", secs(ts[len(ts)/2]), secs(ts[len(ts)-1]))
		}
		po, to := stat(func(r itaRow) itaRun { return r.optd })
		pc, tc := stat(func(r itaRow) itaRun { return r.cbc })
		ph, th := stat(func(r itaRow) itaRun { return r.hgs })
		var geCBC, ltCBC, geHS, ltHS, faster, compared int
		var ratios []float64
		for _, r := range fr {
			// where optd or the peer stopped at the limit
			if !r.optd.proven || !r.cbc.proven {
				if r.optd.objective >= r.cbc.objective-1e-9 {
					geCBC++
				} else {
					ltCBC++
				}
			}
			if !r.optd.proven || !r.hgs.proven {
				if r.optd.objective >= r.hgs.objective-1e-9 {
					geHS++
				} else {
					ltHS++
				}
			}
			if ratio, ok := itaRatio(r, limit); ok {
				ratios = append(ratios, ratio)
				compared++
				if ratio >= 1 {
					faster++
				}
			}
		}
		inc := "–"
		if geCBC+ltCBC+geHS+ltHS > 0 {
			inc = fmt.Sprintf("CBC %d ≥, %d < / HiGHS %d ≥, %d <", geCBC, ltCBC, geHS, ltHS)
		}
		geo := "–"
		if len(ratios) > 0 {
			geo = fmt.Sprintf("%.3g×", geomean(ratios))
		}
		t.add(fam, len(fr), fmt.Sprintf("%d", po), to, fmt.Sprintf("%d", pc), tc, fmt.Sprintf("%d", ph), th, inc,
			fmt.Sprintf("%d of %d", faster, compared), geo)
	}
	return t.String()
}

// itaRatio is the faster peer's time over optd's on an instance that some
// solver proved: a peer that stopped at the limit counts with the limit
// (a lower bound on its time), and so does optd. ok is false when no
// solver proved the instance.
func itaRatio(r itaRow, limit time.Duration) (float64, bool) {
	peer, ok := r.fasterPeer()
	if !ok {
		if !r.optd.proven {
			return 0, false
		}
		peer = limit.Seconds()
	}
	optd := r.optd.seconds
	if !r.optd.proven {
		optd = math.Max(optd, limit.Seconds())
	}
	return peer / optd, true
}

// itaSummary states each target of the comparison with the instances
// that miss it.
func itaSummary(rows []itaRow, limit time.Duration) string {
	var b strings.Builder
	proven, within1 := 0, 0
	var notProven, slower, worse, refuted, invalid []string
	var ratios []float64
	for _, r := range rows {
		if r.optd.proven {
			proven++
			if r.optd.seconds <= 1 {
				within1++
			}
		} else {
			notProven = append(notProven, fmt.Sprintf("%s (incumbent %s, bound %s; CBC %s, HiGHS %s)", r.c.name(),
				objNum(r.optd.objective), objNum(r.bound), peerCell(r.cbc), peerCell(r.hgs)))
		}
		if ratio, ok := itaRatio(r, limit); ok {
			ratios = append(ratios, ratio)
			if ratio < 1 {
				peer, _ := r.fasterPeer()
				slower = append(slower, fmt.Sprintf("%s (optd %s, faster peer %s)", r.c.name(), secs(r.optd.seconds), secs(peer)))
			}
		}
		for _, p := range []struct {
			name string
			run  itaRun
		}{{"CBC", r.cbc}, {"HiGHS", r.hgs}} {
			if (!p.run.proven || !r.optd.proven) && r.optd.objective < p.run.objective-1e-9 {
				worse = append(worse, fmt.Sprintf("%s (optd %s < %s %s)", r.c.name(), objNum(r.optd.objective), p.name, objNum(p.run.objective)))
			}
			if p.run.refuted {
				refuted = append(refuted, fmt.Sprintf("%s (%s claimed %s optimal; optd's checked assignment is worth %s)",
					r.c.name(), p.name, objNum(p.run.objective), objNum(r.optd.objective)))
			}
			if p.run.invalid != "" {
				invalid = append(invalid, fmt.Sprintf("%s (%s: %s)", r.c.name(), p.name, p.run.invalid))
			}
		}
	}
	fmt.Fprintf(&b, "\nProven optimal by optd: **%d of %d** within %s, %d within 1 s. ", proven, len(rows), limit, within1)
	if len(ratios) > 0 {
		fmt.Fprintf(&b, "Geometric mean of (faster peer's time / optd's time) over the %d instances some solver proved "+
			"(a solver stopped by the limit counted at the limit): **%.3g×**; optd was at least as fast as the faster "+
			"peer on %d of them.\n", len(ratios), geomean(ratios), len(ratios)-len(slower))
	}
	list := func(title string, items []string) {
		if len(items) > 0 {
			fmt.Fprintf(&b, "\n%s (%d): %s.\n", title, len(items), strings.Join(items, "; "))
		}
	}
	list("Not proven by optd within the limit", notProven)
	list("Slower than the faster peer", slower)
	list("Incumbent below a peer's where one stopped", worse)
	list("A peer's claimed optimum refuted by optd's checked assignment (not counted as proven)", refuted)
	list("A peer's answer that breaks a row of the instance (no solution)", invalid)
	return b.String()
}

// peerCell describes a peer's outcome briefly.
func peerCell(r itaRun) string {
	switch {
	case r.invalid != "":
		return "no solution"
	case r.refuted:
		return "claimed " + objNum(r.objective) + " optimal (refuted)"
	}
	if r.proven {
		return "proved " + objNum(r.objective)
	}
	return "stopped at " + objNum(r.objective)
}

// objNum formats an objective with 10 significant digits, enough to tell
// apart values one unit (e.g. 0.1) apart.
func objNum(v float64) string { return strconv.FormatFloat(v, 'g', 10, 64) }

// secs formats seconds with 3 significant digits.
func secs(s float64) string {
	if s < 1 {
		return ms(s)
	}
	return fmt.Sprintf("%.3g s", s)
}

// highsVersion is the version of the installed highs npm package.
func highsVersion() string {
	data, err := os.ReadFile(filepath.Join(filepath.Dir(HiGHSScript), "node_modules", "highs", "package.json"))
	if err != nil {
		return "(unknown version)"
	}
	var v struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &v) != nil || v.Version == "" {
		return "(unknown version)"
	}
	return v.Version
}

// nodeVersion is `node --version`.
func nodeVersion(ctx context.Context) string {
	_, out, err := runPeer(ctx, "node", "--version")
	if err != nil {
		return "(unknown version)"
	}
	return strings.TrimSpace(string(out))
}

// b2f is 1 for true and 0 for false.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// geomean is the geometric mean of positive numbers.
func geomean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}

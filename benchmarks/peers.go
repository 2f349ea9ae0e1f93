package benchmarks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Peer solvers run as separate processes on an LP file (CPLEX LP format):
// `cbc` (Debian coinor-cbc) and HiGHS (the highs npm package run by
// Debian's nodejs, benchmarks/highs) for integer programs and `glpsol`
// (glpk-utils) for LPs. They are used only by the report, never at run
// time.

// PeerResult is what a peer solver reported.
type PeerResult struct {
	// Status is the solver's own words ("Optimal", "INTEGER OPTIMAL",
	// "Stopped on time").
	Status string
	// Optimal reports a proven optimum.
	Optimal bool
	// Objective as printed by the solver.
	Objective float64
	// Values are the printed column values by name (CBC only; nonzero
	// columns).
	Values map[string]float64
	// Elapsed is the wall time of the process, file reading included.
	Elapsed time.Duration
	// SolveTime is the wall time the solver itself reports for reading
	// and solving the model (CBC's "Total time … Wallclock seconds",
	// HiGHS's solve() call), without the process start; 0 when unknown.
	SolveTime time.Duration
}

// errPeerOutput is wrapped by every error about a peer's output.
var errPeerOutput = errors.New("benchmarks: unreadable peer solver output")

// runPeer runs bin with args and returns the wall time and the standard
// output; a missing binary is a *SkipError.
func runPeer(ctx context.Context, bin string, args ...string) (time.Duration, []byte, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return 0, nil, Skipf("%s is not on PATH", bin)
	}
	start := time.Now()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	elapsed := time.Since(start)
	if err != nil {
		return elapsed, nil, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err,
			lastLines(stdout.String()+stderr.String(), 5))
	}
	return elapsed, stdout.Bytes(), nil
}

// cbcWallclock matches CBC's closing line "Total time (CPU seconds): x
// (Wallclock seconds): y".
var cbcWallclock = regexp.MustCompile(`Total time \(CPU seconds\):\s*\S+\s*\(Wallclock seconds\):\s*([0-9.eE+-]+)`)

// RunCBC solves the integer program in lpFile with `cbc FILE -threads 1
// [-sec S] -solve -solu OUT` (single-threaded, as optd's exact solver).
func RunCBC(ctx context.Context, lpFile string, limit time.Duration) (*PeerResult, error) {
	sol := strings.TrimSuffix(lpFile, filepath.Ext(lpFile)) + ".cbc.sol"
	args := []string{lpFile, "-threads", "1"}
	if limit > 0 {
		args = append(args, "-sec", strconv.FormatFloat(limit.Seconds(), 'f', 3, 64))
	}
	args = append(args, "-solve", "-solu", sol)
	elapsed, out, err := runPeer(ctx, "cbc", args...)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(sol)
	if err != nil {
		return nil, fmt.Errorf("cbc wrote no solution: %w", err)
	}
	defer f.Close()
	r, err := ParseCBCSolution(f)
	if err != nil {
		return nil, err
	}
	r.Elapsed = elapsed
	if m := cbcWallclock.FindSubmatch(out); m != nil {
		if sec, err := strconv.ParseFloat(string(m[1]), 64); err == nil {
			r.SolveTime = time.Duration(sec * float64(time.Second))
		}
	}
	return r, nil
}

// HiGHSScript is the script that runs HiGHS on an LP file (relative to the
// module root, where the report runs); scripts/setup.sh --bench installs
// its pinned highs package beside it.
const HiGHSScript = "benchmarks/highs/solve.cjs"

// errNoHiGHS says how to install the HiGHS peer.
func errNoHiGHS() error {
	if _, err := exec.LookPath("node"); err != nil {
		return Skipf("node (Debian nodejs) is not on PATH; run scripts/setup.sh --bench")
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(HiGHSScript), "node_modules", "highs", "package.json")); err != nil {
		return Skipf("the highs npm package is not installed in %s; run scripts/setup.sh --bench", filepath.Dir(HiGHSScript))
	}
	return nil
}

// RunHiGHS solves the integer program in lpFile with HiGHS (single
// threaded WebAssembly, relative and absolute MIP gaps 0) and the time
// limit: `node benchmarks/highs/solve.cjs FILE SECONDS`.
func RunHiGHS(ctx context.Context, lpFile string, limit time.Duration) (*PeerResult, error) {
	if err := errNoHiGHS(); err != nil {
		return nil, err
	}
	sec := limit.Seconds()
	if limit <= 0 {
		sec = 1e9
	}
	elapsed, out, err := runPeer(ctx, "node", HiGHSScript, lpFile, strconv.FormatFloat(sec, 'f', 3, 64))
	if err != nil {
		return nil, err
	}
	var res struct {
		Status    string             `json:"status"`
		Objective float64            `json:"objective"`
		Values    map[string]float64 `json:"values"`
		Seconds   float64            `json:"seconds"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("%w: highs: %v: %q", errPeerOutput, err, lastLines(string(out), 2))
	}
	return &PeerResult{Status: res.Status, Optimal: res.Status == "Optimal", Objective: res.Objective,
		Values: res.Values, Elapsed: elapsed, SolveTime: time.Duration(res.Seconds * float64(time.Second))}, nil
}

// ParseCBCSolution reads CBC's solution file: a header
// "STATUS - objective value V" and one line "index name value reducedcost"
// per nonzero column.
func ParseCBCSolution(r io.Reader) (*PeerResult, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		return nil, fmt.Errorf("%w: cbc: empty solution file", errPeerOutput)
	}
	head := sc.Text()
	status, rest, ok := strings.Cut(head, " - objective value ")
	if !ok {
		return nil, fmt.Errorf("%w: cbc: header %q has no objective value", errPeerOutput, head)
	}
	obj, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
	if err != nil {
		return nil, fmt.Errorf("%w: cbc: objective %q: %v", errPeerOutput, rest, err)
	}
	res := &PeerResult{Status: strings.TrimSpace(status), Optimal: strings.HasPrefix(status, "Optimal"), Objective: obj, Values: map[string]float64{}}
	for line := 2; sc.Scan(); line++ {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		// Infeasible rows are listed with "**" before the index.
		if fs[0] == "**" {
			fs = fs[1:]
		}
		if len(fs) < 3 {
			return nil, fmt.Errorf("%w: cbc: line %d: %q", errPeerOutput, line, sc.Text())
		}
		v, err := strconv.ParseFloat(fs[2], 64)
		if err != nil {
			return nil, fmt.Errorf("%w: cbc: line %d: value %q", errPeerOutput, line, fs[2])
		}
		res.Values[fs[1]] = v
	}
	return res, sc.Err()
}

// RunGLPSOL solves the LP in lpFile with `glpsol --lp FILE -o OUT`.
func RunGLPSOL(ctx context.Context, lpFile string) (*PeerResult, error) {
	out := strings.TrimSuffix(lpFile, filepath.Ext(lpFile)) + ".glpk.txt"
	elapsed, _, err := runPeer(ctx, "glpsol", "--lp", lpFile, "-o", out)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("glpsol wrote no solution: %w", err)
	}
	r, err := ParseGLPKOutput(data)
	if err != nil {
		return nil, err
	}
	r.Elapsed = elapsed
	return r, nil
}

// ParseGLPKOutput reads the status and objective of glpsol's printable
// solution (-o): lines "Status:     OPTIMAL" and
// "Objective:  obj = 123.4 (MINimum)".
func ParseGLPKOutput(data []byte) (*PeerResult, error) {
	res := &PeerResult{}
	var haveStatus, haveObj bool
	for line := range bytes.Lines(data) {
		s := strings.TrimSpace(string(line))
		switch {
		case strings.HasPrefix(s, "Status:"):
			res.Status = strings.TrimSpace(strings.TrimPrefix(s, "Status:"))
			res.Optimal = res.Status == "OPTIMAL" || res.Status == "INTEGER OPTIMAL"
			haveStatus = true
		case strings.HasPrefix(s, "Objective:"):
			_, rest, ok := strings.Cut(s, "=")
			if !ok {
				return nil, fmt.Errorf("%w: glpsol: %q", errPeerOutput, s)
			}
			f := strings.Fields(rest)
			if len(f) == 0 {
				return nil, fmt.Errorf("%w: glpsol: %q has no value", errPeerOutput, s)
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return nil, fmt.Errorf("%w: glpsol: objective %q: %v", errPeerOutput, f[0], err)
			}
			res.Objective, haveObj = v, true
		}
		if haveStatus && haveObj {
			return res, nil
		}
	}
	return nil, fmt.Errorf("%w: glpsol: no Status and Objective lines", errPeerOutput)
}

// lastLines returns the last n lines of s joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

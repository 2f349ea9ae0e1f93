package benchmarks

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Peer solvers run as separate processes on an LP file (CPLEX LP format):
// `cbc` (Debian coinor-cbc) for integer programs and `glpsol` (glpk-utils)
// for LPs. They are used only by the report, never at run time.

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
}

// errPeerOutput is wrapped by every error about a peer's output.
var errPeerOutput = errors.New("benchmarks: unreadable peer solver output")

// runPeer runs bin with args and returns the wall time; a missing binary is
// a *SkipError.
func runPeer(ctx context.Context, bin string, args ...string) (time.Duration, error) {
	path, err := exec.LookPath(bin)
	if err != nil {
		return 0, Skipf("%s is not on PATH", bin)
	}
	start := time.Now()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	elapsed := time.Since(start)
	if err != nil {
		return elapsed, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, lastLines(string(out), 5))
	}
	return elapsed, nil
}

// RunCBC solves the integer program in lpFile with `cbc FILE -threads 1
// [-sec S] -solve -solu OUT` (single-threaded, as optd's exact solver).
func RunCBC(ctx context.Context, lpFile string, limit time.Duration) (*PeerResult, error) {
	sol := strings.TrimSuffix(lpFile, filepath.Ext(lpFile)) + ".cbc.sol"
	args := []string{lpFile, "-threads", "1"}
	if limit > 0 {
		args = append(args, "-sec", strconv.FormatFloat(limit.Seconds(), 'f', 3, 64))
	}
	args = append(args, "-solve", "-solu", sol)
	elapsed, err := runPeer(ctx, "cbc", args...)
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
	return r, nil
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
	elapsed, err := runPeer(ctx, "glpsol", "--lp", lpFile, "-o", out)
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

package solver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cbcResult is what CBC (or HiGHS: runHiGHS) reported for one instance.
type cbcResult struct {
	status    string  // first words of the solution file, e.g. "Optimal"
	optimal   bool    // CBC proved optimality
	objective float64 // recomputed exactly from the solution's x_j_i values (CheckCounts)
	elapsed   time.Duration
	// invalid says why the solution is none: its counts break a row of
	// the instance (a solver's tolerances let it); objective and optimal
	// are then 0 and false
	invalid string
}

// refutedBy reports whether ex, a result of optd whose assignment is
// checked (checkFeasible), is worth more than r's claimed optimum: the
// claim is then false (a MIP solver's tolerances: HiGHS 1.15 on
// memory-only-17001), and it is said and not counted, never a failure of
// optd's.
func (r cbcResult) refutedBy(ex *Result) bool {
	return r.optimal && ex.Objective > r.objective+objTol*max(1, r.objective)
}

// setSolution checks a solver's solution, given as the LP file's column
// values, and sets r's objective, or r.invalid (and optimal false) where
// the counts break a row.
func (r *cbcResult) setSolution(in *Instance, values map[string]float64) error {
	x, err := LPCounts(in, values)
	if err != nil {
		return err
	}
	if r.objective, err = CheckCounts(in, x); err != nil {
		r.invalid, r.optimal, r.objective = err.Error(), false, 0
	}
	return nil
}

var errNoCBC = errors.New("cbc not on PATH")

// solveWithBoth solves in with the exact method and with CBC, limit each,
// checks the exact result feasible and skips the test where CBC is not
// installed: the first half of every agreement test.
func solveWithBoth(t *testing.T, dir, name string, in *Instance, limit time.Duration) (*Result, cbcResult) {
	t.Helper()
	ex, err := Exact(context.Background(), in, Options{TimeLimit: limit})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	checkFeasible(t, in, ex)
	cb, err := runCBC(context.Background(), dir, name, in, limit)
	if err == errNoCBC {
		t.Skip("cbc is not on PATH (Debian package coinor-cbc); skipping the CBC agreement test")
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ex, cb
}

// runCBC writes in as an LP file in dir and solves it with
// `cbc FILE -threads 1 [-sec S] -solve -solu OUT`, single-threaded. The
// objective is recomputed from the integer values of the solution file
// (so it is compared exactly, not through CBC's 8 printed decimals).
func runCBC(ctx context.Context, dir, name string, in *Instance, limit time.Duration) (cbcResult, error) {
	var r cbcResult
	bin, err := exec.LookPath("cbc")
	if err != nil {
		return r, errNoCBC
	}
	lpPath, err := writeLPFile(dir, name, in)
	if err != nil {
		return r, err
	}
	solPath := filepath.Join(dir, name+".sol")
	args := []string{lpPath, "-threads", "1"}
	if limit > 0 {
		args = append(args, "-sec", strconv.FormatFloat(limit.Seconds(), 'f', 3, 64))
	}
	args = append(args, "-solve", "-solu", solPath)
	start := time.Now()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	r.elapsed = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("cbc: %v: %s", err, lastLines(string(out), 5))
	}
	sol, err := os.Open(solPath)
	if err != nil {
		return r, fmt.Errorf("cbc wrote no solution: %v: %s", err, lastLines(string(out), 5))
	}
	defer sol.Close()
	sc := bufio.NewScanner(sol)
	if !sc.Scan() {
		return r, fmt.Errorf("cbc: empty solution file")
	}
	head := sc.Text()
	r.status, _, _ = strings.Cut(head, " - ")
	r.optimal = strings.HasPrefix(head, "Optimal")
	values := map[string]float64{}
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 3 || !strings.HasPrefix(fs[1], "x_") {
			continue
		}
		v, err := strconv.ParseFloat(fs[2], 64)
		if err != nil {
			return r, fmt.Errorf("cbc: bad value %q", fs[2])
		}
		values[fs[1]] = v
	}
	if err := sc.Err(); err != nil {
		return r, err
	}
	if err := r.setSolution(in, values); err != nil {
		return r, fmt.Errorf("cbc: %w", err)
	}
	return r, nil
}

// writeLPFile writes in (WriteLP) to dir/name.lp and returns the path.
func writeLPFile(dir, name string, in *Instance) (string, error) {
	lpPath := filepath.Join(dir, name+".lp")
	f, err := os.Create(lpPath)
	if err != nil {
		return "", err
	}
	if err := WriteLP(f, in); err != nil {
		f.Close()
		return "", err
	}
	return lpPath, f.Close()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

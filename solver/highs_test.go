package solver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// highsScript runs HiGHS (the pinned highs npm package, WebAssembly, one
// thread, MIP gaps 0) on an LP file: `node solve.cjs FILE SECONDS`, one
// JSON object on stdout; scripts/setup.sh --bench installs the package
// beside it. The path is relative to this package's directory, where its
// tests run.
var highsScript = filepath.Join("..", "benchmarks", "highs", "solve.cjs")

var errNoHiGHS = errors.New("node or the highs npm package is missing; run scripts/setup.sh --bench")

// runHiGHS writes in as an LP file in dir (as runCBC) and solves it with
// HiGHS within limit. The objective is recomputed from the integer values
// of its solution, as runCBC's; the time is HiGHS's solve (parsing the LP
// included), not node's start and the module's loading (1-2 s).
func runHiGHS(ctx context.Context, dir, name string, in *Instance, limit time.Duration) (cbcResult, error) {
	var r cbcResult
	if _, err := exec.LookPath("node"); err != nil {
		return r, errNoHiGHS
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(highsScript), "node_modules", "highs", "package.json")); err != nil {
		return r, errNoHiGHS
	}
	lpPath, err := writeLPFile(dir, name, in)
	if err != nil {
		return r, err
	}
	out, err := exec.CommandContext(ctx, "node", highsScript, lpPath, strconv.FormatFloat(limit.Seconds(), 'f', 3, 64)).Output()
	if err != nil {
		return r, fmt.Errorf("highs: %v: %s", err, lastLines(string(out), 5))
	}
	var res struct {
		Status  string             `json:"status"`
		Values  map[string]float64 `json:"values"`
		Seconds float64            `json:"seconds"` // in solve(), without loading the WebAssembly module
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return r, fmt.Errorf("highs: %v: %s", err, lastLines(string(out), 2))
	}
	r.status, r.optimal = res.Status, res.Status == "Optimal"
	r.elapsed = time.Duration(res.Seconds * float64(time.Second))
	if err := r.setSolution(in, res.Values); err != nil {
		return r, fmt.Errorf("highs: %w", err)
	}
	return r, nil
}

package storecmd

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/store"
)

func runCLI(t *testing.T, args ...string) (Report, string, int) {
	t.Helper()
	stdout, stderr, code := cli.RunCaptured(context.Background(), args, NewCommand)
	var r Report
	if stdout != "" {
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatalf("stdout is not a report: %v\n%s", err, stdout)
		}
	}
	return r, stderr, code
}

// TestCheck: a healthy data directory reports its contents and exits 0; a
// damaged table is reported with its file and exits 1, after the report; a
// directory without a store is an error.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(dir, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(t.Context(), store.Cluster{ID: "c"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := st.Commit(t.Context(), "c", store.Change{Put: []store.Job{{ID: "j", Seq: 1}}, Log: [][]byte{[]byte("e")}}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	r, stderr, code := runCLI(t, "store", "check", "--data-dir", dir)
	if code != 0 || !r.Healthy || r.Format != 4 || r.Clusters != 1 || r.Jobs != 1 || r.LogEntries != 1 || len(r.Problems) != 0 {
		t.Fatalf("healthy: exit %d, report %+v, stderr %q", code, r, stderr)
	}

	// Damage every log: the newest is refused when a later chunk vouches
	// for the damaged bytes, so damage all of them to be sure of a problem.
	logs, _ := filepath.Glob(filepath.Join(dir, store.EngineDir, "*.log"))
	for _, l := range logs {
		if err := os.Truncate(l, 100); err != nil {
			t.Fatal(err)
		}
	}
	r, stderr, code = runCLI(t, "store", "check", "--data-dir", dir)
	if code != 1 || r.Healthy || len(r.Problems) == 0 || !strings.HasPrefix(r.Problems[0].File, store.EngineDir+"/") ||
		!strings.Contains(r.Problems[0].Reason, "truncated") || !strings.Contains(stderr, "problems") {
		t.Fatalf("damaged: exit %d, report %+v, stderr %q", code, r, stderr)
	}

	_, stderr, code = runCLI(t, "store", "check", "--data-dir", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "holds no store") {
		t.Errorf("empty directory: exit %d, stderr %q", code, stderr)
	}
}

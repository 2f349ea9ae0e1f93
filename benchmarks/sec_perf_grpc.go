package benchmarks

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// perfGRPC runs scripts/loadtest.sh: ghz against `optd serve`'s
// PlaceReduces on a 1000-slot cluster and Heartbeat on a 100-node cluster,
// and against a bare grpc-go server in the same run, at the same
// concurrency. Quick mode runs a short load and
// only if ghz is already installed (CI does not download it).
func perfGRPC(ctx context.Context, env *Env) (*Output, error) {
	script := filepath.Join("scripts", "loadtest.sh")
	if _, err := os.Stat(script); err != nil {
		return nil, Skipf("%s not found (run the report from the repository's top directory)", script)
	}
	args := []string{"--out", filepath.Join(os.TempDir(), "optd-loadtest"),
		"--slots", fmt.Sprint(Pick(env, 200, 1000)), "--cycles", fmt.Sprint(Pick(env, 1, 5))}
	if env.Quick {
		args = append(args, "--no-install")
	}
	cmd := exec.CommandContext(ctx, script, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 3 {
		return nil, Skipf("ghz is not installed (the full report installs it: go install github.com/bojand/ghz/cmd/ghz@v0.120.0)")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", script, err, stderr.String())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "`%s %s`: ghz drives `optd serve` (durable state, group commit) over loopback; PlaceReduces is measured "+
		"in cycles of submit → place → finish on a cluster of 10-slot nodes, every call acknowledged only after its change "+
		"is synced to the write-ahead log (one fdatasync per group of calls). "+
		"ghz sends each run's messages from a JSON array it encodes once, as it does the echo run's constant message. "+
		"Heartbeat is measured on a 100-node cluster under `fair` with 10 jobs of 440 tasks, ghz sending the nodes' heartbeats "+
		"round-robin (the fill, then a busy cluster's steady state). "+
		"The bare server answers grpc.health.v1.Health/Check with grpc-go defaults: the ceiling of any RPC on this machine.\n\n",
		script, strings.Join(args, " "))
	b.Write(out)
	return &Output{Markdown: b.String()}, nil
}

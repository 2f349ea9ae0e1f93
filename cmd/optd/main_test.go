package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// guard bounds waits that would otherwise hang a broken test; no assertion
// depends on it.
const guard = 60 * time.Second

// TestBinary builds optd and checks what only a real process shows: exit
// codes, the one-line error on stderr, and SIGTERM handling.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not in PATH")
	}
	bin := filepath.Join(t.TempDir(), "optd")
	build := exec.Command(gobin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	env := cleanEnv()

	t.Run("usage error", func(t *testing.T) {
		cmd := exec.Command(bin, "serve", "--bogus")
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("exit = %v, want status 1", err)
		}
		want := "optd: unknown flag: --bogus; see 'optd serve --help'\n"
		if stderr.String() != want || stdout.Len() != 0 {
			t.Errorf("stderr %q stdout %q, want stderr %q and no stdout", stderr.String(), stdout.String(), want)
		}
	})

	t.Run("config from env", func(t *testing.T) {
		cmd := exec.Command(bin, "config")
		cmd.Env = append(env, "OPTD_LISTEN=127.0.0.1:9999")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		var c struct{ Listen string }
		if err := json.Unmarshal(out, &c); err != nil || c.Listen != "127.0.0.1:9999" {
			t.Errorf("optd config = %s (%v), want listen from OPTD_LISTEN", out, err)
		}
	})

	t.Run("serve until SIGTERM", func(t *testing.T) {
		dataDir := filepath.Join(t.TempDir(), "data")
		cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--log-format", "json")
		cmd.Env = env
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		stderrPipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killed := false
		defer func() {
			if !killed {
				cmd.Process.Kill()
				cmd.Wait()
			}
		}()

		// Read log lines until "listening"; keep the rest for later.
		lines := make(chan string, 64)
		go func() {
			sc := bufio.NewScanner(stderrPipe)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var logs []string
		var addr string
		timeout := time.After(guard)
		for addr == "" {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("stderr closed before listening: %q", logs)
				}
				logs = append(logs, line)
				var rec struct{ Msg, Addr string }
				if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
					addr = rec.Addr
				}
			case <-timeout:
				t.Fatalf("no listening line: %q", logs)
			}
		}

		waitServing(t, addr)

		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		for line := range lines {
			logs = append(logs, line)
		}
		err = cmd.Wait()
		killed = true
		if err != nil {
			t.Errorf("exit after SIGTERM = %v, want status 0; logs %q", err, logs)
		}
		if stdout.Len() != 0 {
			t.Errorf("serve wrote %q on stdout", stdout.String())
		}
		if last := logs[len(logs)-1]; !strings.Contains(last, `"msg":"stopped"`) {
			t.Errorf("last log line %q, want the stopped line", last)
		}
	})
}

func waitServing(t *testing.T, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	w, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := w.Recv()
		if err != nil {
			t.Fatalf("watch ended before SERVING: %v", err)
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
	}
}

// cleanEnv is the test's environment without OPTD_ variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPTD_") {
			env = append(env, kv)
		}
	}
	return env
}

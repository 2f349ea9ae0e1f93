package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
	"github.com/optd/optd/internal/testenv"
)

func init() { cli.QuietPlainProgress() } // stderr is checked empty

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// guard bounds waits that would otherwise hang a broken test; no assertion
// depends on it.
const guard = 30 * time.Second

func clearEnv(t *testing.T) {
	t.Helper()
	for _, key := range config.Keys() {
		t.Setenv(config.EnvVar(key), "")
	}
	t.Setenv(config.EnvConfigFile, "")
}

type result struct {
	code           int
	stdout, stderr string
}

func optd(t *testing.T, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), NewRootCommand(), args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

func TestVerbsRegistered(t *testing.T) {
	root := NewRootCommand()
	for _, name := range []string{"serve", "config", "version"} {
		c, _, err := root.Find([]string{name})
		if err != nil || c.Name() != name {
			t.Errorf("verb %q not registered (found %v, %v)", name, c.Name(), err)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	clearEnv(t)
	for _, args := range [][]string{{"nosuchverb"}, {"--nosuchflag"}, {"serve", "--nosuchflag"}, {"version", "x"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			r := optd(t, args...)
			if r.code != 1 || r.stdout != "" {
				t.Errorf("code %d stdout %q, want 1 and nothing", r.code, r.stdout)
			}
			if !strings.HasPrefix(r.stderr, "optd: ") || strings.Count(r.stderr, "\n") != 1 ||
				!strings.Contains(r.stderr, "--help") {
				t.Errorf("stderr = %q, want one line \"optd: ...\" pointing at --help", r.stderr)
			}
		})
	}
}

func TestConfigGolden(t *testing.T) {
	clearEnv(t)
	r := optd(t, "config")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	golden := filepath.Join("testdata", "config_default.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(r.stdout), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if r.stdout != string(want) {
		t.Errorf("optd config =\n%s\nwant (%s)\n%s", r.stdout, golden, want)
	}
}

// configJSON mirrors the documented output of `optd config`.
type configJSON struct {
	Listen  string `json:"listen"`
	DataDir string `json:"data_dir"`
	Log     struct {
		Level  string `json:"level"`
		Format string `json:"format"`
	} `json:"log"`
	ShutdownTimeout string `json:"shutdown_timeout"`
	TLS             struct {
		CertFile     string `json:"cert_file"`
		KeyFile      string `json:"key_file"`
		ClientCAFile string `json:"client_ca_file"`
	} `json:"tls"`
	Auth struct {
		TokenFile string `json:"token_file"`
	} `json:"auth"`
	Metrics struct {
		Listen string `json:"listen"`
	} `json:"metrics"`
	Gateway struct {
		Listen string `json:"listen"`
	} `json:"gateway"`
	Limits struct {
		MaxRequestBytes       int    `json:"max_request_bytes"`
		MaxSlots              int    `json:"max_slots"`
		MaxJobs               int    `json:"max_jobs"`
		MaxTasks              int    `json:"max_tasks"`
		MaxSolveTime          string `json:"max_solve_time"`
		MaxSimulatedJobs      int    `json:"max_simulated_jobs"`
		MaxNodes              int    `json:"max_nodes"`
		MaxClusters           int    `json:"max_clusters"`
		MaxTotalNodes         int    `json:"max_total_nodes"`
		MaxTotalSlots         int    `json:"max_total_slots"`
		MaxTotalJobs          int    `json:"max_total_jobs"`
		MaxClusterTasks       int    `json:"max_cluster_tasks"`
		MaxTotalTasks         int    `json:"max_total_tasks"`
		MaxStartsPerHeartbeat int    `json:"max_starts_per_heartbeat"`
		MaxMemoryMB           int    `json:"max_memory_mb"`
	} `json:"limits"`
}

func decodeConfig(t *testing.T, r result) configJSON {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var c configJSON
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	if dec.More() {
		t.Fatalf("stdout %q holds more than one JSON value", r.stdout)
	}
	return c
}

func TestConfigReflectsLayers(t *testing.T) {
	clearEnv(t)
	file := filepath.Join(t.TempDir(), "optd.toml")
	body := "data_dir = \"from-file\"\nshutdown_timeout = \"2m\"\n[log]\nformat = \"json\"\nlevel = \"error\"\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OPTD_CONFIG", file)
	t.Setenv("OPTD_LISTEN", "0.0.0.0:1234")
	t.Setenv("OPTD_LOG_LEVEL", "warn")
	t.Setenv("OPTD_SHUTDOWN_TIMEOUT", "90s")

	c := decodeConfig(t, optd(t, "config"))
	if c.Listen != "0.0.0.0:1234" || c.Log.Level != "warn" || c.ShutdownTimeout != "1m30s" {
		t.Errorf("env overrides not shown: %+v", c)
	}
	if c.DataDir != "from-file" || c.Log.Format != "json" {
		t.Errorf("file values not shown: %+v", c)
	}

	c = decodeConfig(t, optd(t, "--log-level", "debug", "config", "--listen", "[::1]:5", "--shutdown-timeout", "1s"))
	if c.Listen != "[::1]:5" || c.Log.Level != "debug" || c.ShutdownTimeout != "1s" {
		t.Errorf("flags do not beat env: %+v", c)
	}
}

func TestVersion(t *testing.T) {
	clearEnv(t)
	r := optd(t, "version")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout %q: %v", r.stdout, err)
	}
	if s, _ := v["version"].(string); s == "" {
		t.Errorf("version missing in %s", r.stdout)
	}
	if s, _ := v["go"].(string); !strings.HasPrefix(s, "go") {
		t.Errorf("go missing in %s", r.stdout)
	}
}

// listenAddr returns the address of the "listening" JSON log line, or "".
func listenAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var rec struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "listening" {
			return rec.Addr
		}
	}
	return ""
}

// TestServeInProcess runs `optd serve` through the root command, probes its
// health over gRPC and stops it by cancelling the context (the path a signal
// takes through signal.NotifyContext).
func TestServeInProcess(t *testing.T) {
	clearEnv(t)
	dataDir := filepath.Join(t.TempDir(), "state")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout bytes.Buffer
	stderr := &testenv.SyncBuffer{}
	code := make(chan int, 1)
	go func() {
		code <- cli.Run(ctx, NewRootCommand(),
			[]string{"--log-format", "json", "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir},
			&stdout, stderr)
	}()

	var addr string
	deadline := time.Now().Add(guard)
	for addr = listenAddr(stderr.String()); addr == ""; addr = listenAddr(stderr.String()) {
		select {
		case c := <-code:
			t.Fatalf("serve exited with %d before listening: %s", c, stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listening line in %q", stderr.String())
		}
	}

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	wctx, wcancel := context.WithTimeout(ctx, guard)
	w, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := w.Recv()
		if err != nil {
			t.Fatalf("watch ended before SERVING: %v", err)
		}
		if resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			break
		}
	}
	wcancel()

	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		t.Errorf("data dir not created: %v", err)
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit code %d, want 0; stderr %s", c, stderr.String())
		}
	case <-time.After(guard):
		t.Fatal("serve did not stop")
	}
	if stdout.Len() != 0 {
		t.Errorf("serve wrote %q on stdout", stdout.String())
	}
	if !strings.Contains(stderr.String(), `"msg":"stopped"`) {
		t.Errorf("no stopped line in %q", stderr.String())
	}
}

// TestFlagPlaceholders walks every verb's flags: pflag turns the first
// `quoted` word of a usage text into the value's placeholder in --help, so
// a usage quoting a command ("see `optd schema workload`") printed
// "--workload optd schema workload". A placeholder is one word.
func TestFlagPlaceholders(t *testing.T) {
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			checked++
			name, _ := pflag.UnquoteUsage(f)
			if strings.ContainsAny(name, " \t") {
				t.Errorf("%s --%s: --help shows the placeholder %q (a backquoted phrase in its usage)", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand())
	if checked < 50 {
		t.Fatalf("checked %d flags: the command tree was not walked", checked)
	}
}

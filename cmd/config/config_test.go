package config

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// clearEnv blanks every OPTD_ variable for the test (viper ignores empty
// variables), so the developer's environment cannot leak in.
func clearEnv(t *testing.T) {
	t.Helper()
	for _, key := range Keys() {
		t.Setenv(EnvVar(key), "")
	}
	t.Setenv(EnvConfigFile, "")
}

// flags returns a flag set with every setting and --config, parsed from args.
func flags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	AddFlags(fs, Default(), Keys()...)
	AddFileFlag(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return fs
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func load(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	return Load(viper.New(), flags(t, args...))
}

func mustLoad(t *testing.T, args ...string) Config {
	t.Helper()
	c, err := load(t, args...)
	if err != nil {
		t.Fatalf("Load(%q): %v", args, err)
	}
	return c
}

// full is a configuration that differs from Default in every field of the
// original five; the server's TLS, auth, metrics and limits keys keep their
// defaults here and are layered in TestServerKeysLayers.
var full = Config{
	Listen:          "0.0.0.0:9000",
	DataDir:         "/var/lib/optd",
	Log:             Log{Level: "debug", Format: "json"},
	ShutdownTimeout: 3 * time.Second,
	Limits:          Default().Limits,
}

func TestDefaultIsValid(t *testing.T) {
	d := Default()
	if err := d.Verify(); err != nil {
		t.Fatalf("Default().Verify() = %v", err)
	}
	if d == full {
		t.Fatal("the fixture must differ from the defaults")
	}
	want := Config{Listen: "127.0.0.1:7443", DataDir: "optd-data", Log: Log{"info", "text"}, ShutdownTimeout: 10 * time.Second,
		Limits: Limits{MaxRequestBytes: 4 << 20, MaxSlots: 100000, MaxJobs: 100000, MaxTasks: 200000, MaxSolveTime: time.Minute, MaxSimulatedJobs: 10000000, MaxNodes: 100000, MaxClusters: 1000, MaxTotalNodes: 1000000, MaxTotalSlots: 1000000, MaxTotalJobs: 1000000, MaxClusterTasks: 2000000, MaxTotalTasks: 5000000, MaxStartsPerHeartbeat: 1000, MaxMemoryMB: 4096}}
	if d != want {
		t.Fatalf("Default() = %+v, want %+v", d, want)
	}
}

func TestEnvVarNames(t *testing.T) {
	want := map[string]string{
		KeyListen:                "OPTD_LISTEN",
		KeyDataDir:               "OPTD_DATA_DIR",
		KeyLogLevel:              "OPTD_LOG_LEVEL",
		KeyLogFormat:             "OPTD_LOG_FORMAT",
		KeyShutdownTimeout:       "OPTD_SHUTDOWN_TIMEOUT",
		KeyTLSCert:               "OPTD_TLS_CERT_FILE",
		KeyTLSKey:                "OPTD_TLS_KEY_FILE",
		KeyTLSClientCA:           "OPTD_TLS_CLIENT_CA_FILE",
		KeyTokenFile:             "OPTD_AUTH_TOKEN_FILE",
		KeyMetricsListen:         "OPTD_METRICS_LISTEN",
		KeyGatewayListen:         "OPTD_GATEWAY_LISTEN",
		KeyMaxRequestBytes:       "OPTD_LIMITS_MAX_REQUEST_BYTES",
		KeyMaxSlots:              "OPTD_LIMITS_MAX_SLOTS",
		KeyMaxJobs:               "OPTD_LIMITS_MAX_JOBS",
		KeyMaxTasks:              "OPTD_LIMITS_MAX_TASKS",
		KeyMaxSolveTime:          "OPTD_LIMITS_MAX_SOLVE_TIME",
		KeyMaxSimulatedJobs:      "OPTD_LIMITS_MAX_SIMULATED_JOBS",
		KeyMaxNodes:              "OPTD_LIMITS_MAX_NODES",
		KeyMaxClusters:           "OPTD_LIMITS_MAX_CLUSTERS",
		KeyMaxTotalNodes:         "OPTD_LIMITS_MAX_TOTAL_NODES",
		KeyMaxTotalSlots:         "OPTD_LIMITS_MAX_TOTAL_SLOTS",
		KeyMaxTotalJobs:          "OPTD_LIMITS_MAX_TOTAL_JOBS",
		KeyMaxClusterTasks:       "OPTD_LIMITS_MAX_CLUSTER_TASKS",
		KeyMaxTotalTasks:         "OPTD_LIMITS_MAX_TOTAL_TASKS",
		KeyMaxStartsPerHeartbeat: "OPTD_LIMITS_MAX_STARTS_PER_HEARTBEAT",
		KeyMaxMemoryMB:           "OPTD_LIMITS_MAX_MEMORY_MB",
	}
	for key, env := range want {
		if got := EnvVar(key); got != env {
			t.Errorf("EnvVar(%q) = %q, want %q", key, got, env)
		}
	}
	if len(Keys()) != len(want) {
		t.Errorf("Keys() = %v, want the %d keys above", Keys(), len(want))
	}
}

// Each layer alone.

func TestLayerDefaults(t *testing.T) {
	clearEnv(t)
	if got := mustLoad(t); got != Default() {
		t.Fatalf("no flags, env or file: got %+v, want defaults %+v", got, Default())
	}
}

func TestLayerFile(t *testing.T) {
	files := map[string]string{
		"optd.yaml": "listen: 0.0.0.0:9000\ndata_dir: /var/lib/optd\nlog:\n  level: debug\n  format: json\nshutdown_timeout: 3s\n",
		"optd.yml":  "listen: 0.0.0.0:9000\ndata_dir: /var/lib/optd\nlog: {level: debug, format: json}\nshutdown_timeout: 3s\n",
		"optd.json": `{"listen": "0.0.0.0:9000", "data_dir": "/var/lib/optd", "log": {"level": "debug", "format": "json"}, "shutdown_timeout": "3s"}`,
		"optd.toml": "listen = \"0.0.0.0:9000\"\ndata_dir = \"/var/lib/optd\"\nshutdown_timeout = \"3s\"\n[log]\nlevel = \"debug\"\nformat = \"json\"\n",
	}
	for name, body := range files {
		t.Run(name, func(t *testing.T) {
			clearEnv(t)
			path := writeFile(t, name, body)
			if got := mustLoad(t, "--config", path); got != full {
				t.Errorf("--config %s: got %+v, want %+v", name, got, full)
			}
			t.Setenv(EnvConfigFile, path)
			if got := mustLoad(t); got != full {
				t.Errorf("%s=%s: got %+v, want %+v", EnvConfigFile, name, got, full)
			}
		})
	}
}

func TestLayerFilePartial(t *testing.T) {
	clearEnv(t)
	path := writeFile(t, "part.yaml", "log:\n  level: warn\n")
	want := Default()
	want.Log.Level = "warn"
	if got := mustLoad(t, "--config", path); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestLayerEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv("OPTD_LISTEN", full.Listen)
	t.Setenv("OPTD_DATA_DIR", full.DataDir)
	t.Setenv("OPTD_LOG_LEVEL", full.Log.Level)
	t.Setenv("OPTD_LOG_FORMAT", full.Log.Format)
	t.Setenv("OPTD_SHUTDOWN_TIMEOUT", "3s")
	if got := mustLoad(t); got != full {
		t.Fatalf("got %+v, want %+v", got, full)
	}
}

func TestLayerFlags(t *testing.T) {
	clearEnv(t)
	got := mustLoad(t, "--listen", full.Listen, "--data-dir", full.DataDir, "--log-level", full.Log.Level,
		"--log-format", full.Log.Format, "--shutdown-timeout", "3s")
	if got != full {
		t.Fatalf("got %+v, want %+v", got, full)
	}
}

func TestPrecedenceFlagEnvFile(t *testing.T) {
	clearEnv(t)
	// The file sets every key; env overrides two; a flag overrides one of those.
	path := writeFile(t, "all.yaml", "listen: 10.0.0.1:1\ndata_dir: file-dir\nlog: {level: error, format: json}\nshutdown_timeout: 1s\n")
	t.Setenv("OPTD_LISTEN", "10.0.0.2:2")
	t.Setenv("OPTD_LOG_LEVEL", "warn")
	got := mustLoad(t, "--config", path, "--listen", "10.0.0.3:3")
	want := Config{
		Listen:          "10.0.0.3:3",                       // flag > env > file
		DataDir:         "file-dir",                         // file > default
		Log:             Log{Level: "warn", Format: "json"}, // env > file
		ShutdownTimeout: time.Second,
		Limits:          Default().Limits,
	}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestConfigFlagBeatsEnv(t *testing.T) {
	clearEnv(t)
	t.Setenv(EnvConfigFile, writeFile(t, "env.yaml", "data_dir: from-env-file\n"))
	flagFile := writeFile(t, "flag.yaml", "data_dir: from-flag-file\n")
	if got := mustLoad(t, "--config", flagFile); got.DataDir != "from-flag-file" {
		t.Fatalf("data_dir = %q, want the --config file's value", got.DataDir)
	}
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(*Config)
		keys   []string // keys named, in order
		values []string
	}{
		{"listen no port", func(c *Config) { c.Listen = "localhost" }, []string{KeyListen}, []string{"localhost"}},
		{"listen bad port", func(c *Config) { c.Listen = "localhost:http" }, []string{KeyListen}, []string{"localhost:http"}},
		{"listen port too big", func(c *Config) { c.Listen = ":70000" }, []string{KeyListen}, []string{":70000"}},
		{"data dir empty", func(c *Config) { c.DataDir = " " }, []string{KeyDataDir}, []string{" "}},
		{"level", func(c *Config) { c.Log.Level = "loud" }, []string{KeyLogLevel}, []string{"loud"}},
		{"format", func(c *Config) { c.Log.Format = "xml" }, []string{KeyLogFormat}, []string{"xml"}},
		{"timeout zero", func(c *Config) { c.ShutdownTimeout = 0 }, []string{KeyShutdownTimeout}, []string{"0s"}},
		{"timeout negative", func(c *Config) { c.ShutdownTimeout = -time.Second }, []string{KeyShutdownTimeout}, []string{"-1s"}},
		{"two at once", func(c *Config) { c.Log.Level = "loud"; c.Listen = "x" },
			[]string{KeyListen, KeyLogLevel}, []string{"x", "loud"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.edit(&c)
			err := c.Verify()
			var ve *VerifyError
			if !errors.As(err, &ve) {
				t.Fatalf("Verify() = %v, want *VerifyError", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if len(ve.Fields) != len(tt.keys) {
				t.Fatalf("fields = %v, want keys %v", ve.Fields, tt.keys)
			}
			for i, f := range ve.Fields {
				if f.Key != tt.keys[i] || f.Value != tt.values[i] {
					t.Errorf("field %d = (%q, %q), want (%q, %q)", i, f.Key, f.Value, tt.keys[i], tt.values[i])
				}
				if !strings.Contains(err.Error(), f.Key) || !strings.Contains(err.Error(), `"`+f.Value+`"`) {
					t.Errorf("message %q does not name %s and %q", err, f.Key, f.Value)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("message is not one line: %q", err)
			}
		})
	}
	// Boundary values that are valid.
	for _, listen := range []string{":7443", "127.0.0.1:0", "[::1]:65535", "example.com:80"} {
		c := Default()
		c.Listen = listen
		if err := c.Verify(); err != nil {
			t.Errorf("listen %q: %v", listen, err)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		file string // file name; "" for no file
		body string
		env  map[string]string
		want []string // substrings of the one-line message
		is   error
	}{
		{name: "unknown key", file: "a.yaml", body: "listen: :1\ncolour: blue\n",
			want: []string{"a.yaml", `unknown key "colour"`}, is: ErrInvalid},
		{name: "unknown nested key", file: "a.yaml", body: "log:\n  level: info\n  colour: blue\n",
			want: []string{`unknown key "log.colour"`}, is: ErrInvalid},
		{name: "unknown key json", file: "a.json", body: `{"listen": ":1", "port": 7}`,
			want: []string{"a.json", `unknown key "port"`}, is: ErrInvalid},
		{name: "log not a table", file: "a.yaml", body: "log: debug\n",
			want: []string{`log "debug"`, "must be a table of level, format"}, is: ErrInvalid},
		{name: "bad yaml", file: "bad.yaml", body: "listen: [\n  :1\nlog: : :\n",
			want: []string{"bad.yaml", "yaml"}, is: ErrInvalid},
		{name: "yaml type error", file: "bad.yaml", body: "- a\n- b\n",
			want: []string{"bad.yaml"}, is: ErrInvalid},
		{name: "bad json", file: "bad.json", body: `{"listen": `,
			want: []string{"bad.json"}, is: ErrInvalid},
		{name: "bad toml", file: "bad.toml", body: "listen = \n",
			want: []string{"bad.toml"}, is: ErrInvalid},
		{name: "unsupported extension", file: "a.ini", body: "listen=:1\n",
			want: []string{"a.ini", `".ini"`, ".yaml"}, is: ErrInvalid},
		{name: "listen not a string", file: "a.yaml", body: "listen: 7443\n",
			want: []string{`listen "7443"`, "must be a string"}, is: ErrInvalid},
		{name: "bare number duration", file: "a.yaml", body: "shutdown_timeout: 10\n",
			want: []string{`shutdown_timeout "10"`, "unit"}, is: ErrInvalid},
		{name: "bad duration env", env: map[string]string{"OPTD_SHUTDOWN_TIMEOUT": "soon"},
			want: []string{`shutdown_timeout "soon"`}, is: ErrInvalid},
		{name: "bad level env", env: map[string]string{"OPTD_LOG_LEVEL": "loud"},
			want: []string{`log.level "loud"`, "debug, info, warn, error"}, is: ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var args []string
			if tt.file != "" {
				args = []string{"--config", writeFile(t, tt.file, tt.body)}
			}
			_, err := load(t, args...)
			checkErr(t, err, tt.is, tt.want...)
		})
	}
}

func TestMissingFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	t.Run("flag", func(t *testing.T) {
		clearEnv(t)
		_, err := load(t, "--config", missing)
		checkErr(t, err, fs.ErrNotExist, missing, "no such file")
	})
	t.Run("env", func(t *testing.T) {
		clearEnv(t)
		t.Setenv(EnvConfigFile, missing)
		_, err := load(t)
		checkErr(t, err, fs.ErrNotExist, missing, "no such file")
	})
}

func checkErr(t *testing.T, err, is error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Load succeeded, want an error")
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("message is not one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not contain %q", msg, w)
		}
	}
	if !errors.Is(err, is) {
		t.Errorf("error %q is not %v", msg, is)
	}
}

// The JSON form of a Config is a valid config file that loads back to it.
func TestMarshalJSONRoundTrip(t *testing.T) {
	clearEnv(t)
	data, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if m["shutdown_timeout"] != "3s" || m["data_dir"] != full.DataDir {
		t.Errorf("JSON %s: want snake_case keys and shutdown_timeout \"3s\"", data)
	}
	if got := mustLoad(t, "--config", writeFile(t, "rt.json", string(data))); got != full {
		t.Fatalf("round trip: got %+v, want %+v", got, full)
	}
}

// FuzzLoadFile feeds arbitrary YAML to Load: it must not panic, a success must
// be a verified Config, and a failure must be a one-line ErrInvalid.
func FuzzLoadFile(f *testing.F) {
	for _, seed := range []string{
		"",
		"listen: 0.0.0.0:9000\nlog:\n  level: debug\n",
		"shutdown_timeout: 1m30s\n",
		"log: {}\n",
		"log: 3\n",
		"colour: blue\n",
		"- a\n",
		"listen: [\n",
		"data_dir: ~\n",
		"shutdown_timeout: -5s\n",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, body string) {
		for _, key := range Keys() {
			t.Setenv(EnvVar(key), "")
		}
		t.Setenv(EnvConfigFile, "")
		path := filepath.Join(dir, "fuzz.yaml")
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := Load(viper.New(), flags(t, "--config", path))
		if err == nil {
			if verr := c.Verify(); verr != nil {
				t.Fatalf("Load accepted %q but Verify says %v", body, verr)
			}
			return
		}
		if !errors.Is(err, ErrInvalid) {
			t.Fatalf("error for %q does not wrap ErrInvalid: %v", body, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("error for %q is not one line: %q", body, err)
		}
	})
}

// TestServerKeysLayers layers the server's TLS, auth, metrics and limits
// keys: file, then env over file, then flag over env, and checks Verify.
func TestServerKeysLayers(t *testing.T) {
	clearEnv(t)
	path := writeFile(t, "srv.yaml", "tls: {cert_file: c.pem, key_file: k.pem, client_ca_file: ca.pem}\n"+
		"auth: {token_file: tok}\nmetrics: {listen: 127.0.0.1:9090}\n"+
		"limits: {max_request_bytes: 1000, max_slots: 10, max_jobs: 5, max_tasks: 7, max_solve_time: 2s, max_simulated_jobs: 99, max_nodes: 11, max_clusters: 12,"+
		" max_total_nodes: 13, max_total_slots: 14, max_total_jobs: 15, max_cluster_tasks: 16, max_total_tasks: 17, max_starts_per_heartbeat: 18}\n")
	got := mustLoad(t, "--config", path)
	want := Default()
	want.TLS = TLS{CertFile: "c.pem", KeyFile: "k.pem", ClientCAFile: "ca.pem"}
	want.Auth.TokenFile = "tok"
	want.Metrics.Listen = "127.0.0.1:9090"
	want.Limits = Limits{MaxRequestBytes: 1000, MaxSlots: 10, MaxJobs: 5, MaxTasks: 7, MaxSolveTime: 2 * time.Second, MaxSimulatedJobs: 99,
		MaxNodes: 11, MaxClusters: 12, MaxTotalNodes: 13, MaxTotalSlots: 14, MaxTotalJobs: 15, MaxClusterTasks: 16, MaxTotalTasks: 17, MaxStartsPerHeartbeat: 18, MaxMemoryMB: Default().Limits.MaxMemoryMB}
	if got != want {
		t.Fatalf("file: got %+v, want %+v", got, want)
	}
	t.Setenv("OPTD_LIMITS_MAX_SLOTS", "20")
	t.Setenv("OPTD_METRICS_LISTEN", "127.0.0.1:9191")
	got = mustLoad(t, "--config", path, "--max-slots", "30", "--max-solve-time", "3s")
	want.Limits.MaxSlots, want.Limits.MaxSolveTime, want.Metrics.Listen = 30, 3*time.Second, "127.0.0.1:9191"
	if got != want {
		t.Fatalf("env and flags: got %+v, want %+v", got, want)
	}
	for _, tc := range []struct {
		args []string
		key  string
	}{
		{[]string{"--tls-cert", "c.pem"}, KeyTLSKey},
		{[]string{"--tls-client-ca", "ca.pem"}, KeyTLSClientCA},
		{[]string{"--max-jobs", "0"}, KeyMaxJobs},
		{[]string{"--max-tasks", "0"}, KeyMaxTasks},
		{[]string{"--max-solve-time", "0s"}, KeyMaxSolveTime},
		{[]string{"--metrics-listen", "nope"}, KeyMetricsListen},
	} {
		_, err := load(t, tc.args...)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Key != tc.key {
			t.Errorf("%q: err = %v, want a FieldError for %s", tc.args, err, tc.key)
		}
	}
	t.Setenv("OPTD_LIMITS_MAX_SLOTS", "") // the file's value applies again
	if _, err := load(t, "--config", writeFile(t, "bad.yaml", "limits: {max_slots: lots}\n")); err == nil || !strings.Contains(err.Error(), KeyMaxSlots) {
		t.Errorf("max_slots: lots: err = %v, want one naming %s", err, KeyMaxSlots)
	}
}

// TestDocTableMatchesSettings: the table of the package comment lists every
// setting, in order, with its flag, environment variable and default, so
// that the one settings table and its documentation cannot drift apart.
func TestDocTableMatchesSettings(t *testing.T) {
	src, err := os.ReadFile("config.go")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	for _, line := range strings.Split(string(src), "\n") {
		if f := strings.Fields(strings.TrimPrefix(line, "//\t")); strings.HasPrefix(line, "//\t") && len(f) >= 4 && strings.HasPrefix(f[1], "--") {
			rows = append(rows, f)
		}
	}
	if len(rows) != len(settings) {
		t.Fatalf("the doc table has %d rows, there are %d settings", len(rows), len(settings))
	}
	d := Default()
	for i, s := range settings {
		row := rows[i]
		if row[0] != s.key || row[1] != "--"+s.flag || row[2] != EnvVar(s.key) {
			t.Errorf("row %d is %v, want %s --%s %s", i, row[:3], s.key, s.flag, EnvVar(s.key))
		}
		want, got := s.value(d), row[3]
		if dur, ok := s.field(&d).(*time.Duration); ok {
			if g, err := time.ParseDuration(got); err != nil || g != *dur {
				t.Errorf("%s: documented default %q, the default is %v", s.key, got, *dur)
			}
			continue
		}
		if want == "" {
			want = `""`
		}
		if got != want {
			t.Errorf("%s: documented default %q, the default is %q", s.key, got, want)
		}
	}
}

// Package config is optd's typed configuration and the one place that knows how
// it is layered.
//
// Every setting has a key (the name in a config file, dotted for nested
// tables), a command-line flag and an environment variable:
//
//	key               flag                 environment             default
//	listen            --listen             OPTD_LISTEN             127.0.0.1:7443
//	data_dir          --data-dir           OPTD_DATA_DIR           optd-data
//	log.level         --log-level          OPTD_LOG_LEVEL          info
//	log.format        --log-format         OPTD_LOG_FORMAT         text
//	shutdown_timeout  --shutdown-timeout   OPTD_SHUTDOWN_TIMEOUT   10s
//	tls.cert_file     --tls-cert           OPTD_TLS_CERT_FILE      "" (plaintext)
//	tls.key_file      --tls-key            OPTD_TLS_KEY_FILE       ""
//	tls.client_ca_file --tls-client-ca     OPTD_TLS_CLIENT_CA_FILE "" (no client certificates)
//	auth.token_file   --token-file         OPTD_AUTH_TOKEN_FILE    "" (no bearer token)
//	metrics.listen    --metrics-listen     OPTD_METRICS_LISTEN     "" (no metrics endpoint)
//	gateway.listen    --gateway-listen     OPTD_GATEWAY_LISTEN     "" (no HTTP/JSON gateway)
//	limits.max_request_bytes --max-request-bytes OPTD_LIMITS_MAX_REQUEST_BYTES 4194304
//	limits.max_slots  --max-slots          OPTD_LIMITS_MAX_SLOTS   100000
//	limits.max_jobs   --max-jobs           OPTD_LIMITS_MAX_JOBS    100000
//	limits.max_tasks  --max-tasks          OPTD_LIMITS_MAX_TASKS   200000
//	limits.max_solve_time --max-solve-time OPTD_LIMITS_MAX_SOLVE_TIME 1m
//	limits.max_simulated_jobs --max-simulated-jobs OPTD_LIMITS_MAX_SIMULATED_JOBS 10000000
//	limits.max_nodes --max-nodes OPTD_LIMITS_MAX_NODES 100000
//	limits.max_clusters --max-clusters OPTD_LIMITS_MAX_CLUSTERS 1000
//	limits.max_total_nodes --max-total-nodes OPTD_LIMITS_MAX_TOTAL_NODES 1000000
//	limits.max_total_slots --max-total-slots OPTD_LIMITS_MAX_TOTAL_SLOTS 1000000
//	limits.max_total_jobs --max-total-jobs OPTD_LIMITS_MAX_TOTAL_JOBS 1000000
//	limits.max_cluster_tasks --max-cluster-tasks OPTD_LIMITS_MAX_CLUSTER_TASKS 2000000
//	limits.max_total_tasks --max-total-tasks OPTD_LIMITS_MAX_TOTAL_TASKS 5000000
//	limits.max_starts_per_heartbeat --max-starts-per-heartbeat OPTD_LIMITS_MAX_STARTS_PER_HEARTBEAT 1000
//	limits.max_memory_mb --max-memory-mb   OPTD_LIMITS_MAX_MEMORY_MB 4096 (command line only)
//
// The data directory is relative to the working directory unless absolute;
// the server keeps its state in DATA_DIR/state (see package store).
//
// The effective value of a key is the first of: a flag given on the command
// line, the environment variable, the config file, the default from
// [Default]. The config file is optional; it is named by --config or
// OPTD_CONFIG (the flag wins), its format is chosen by its extension (.yaml,
// .yml, .json or .toml), and a key it does not know is an error naming the key.
// No directory is searched implicitly: optd reads a config file only when told
// to.
//
// [Load] does the layering on a caller-owned *viper.Viper (never viper's
// global instance), decodes the result into a [Config] and calls
// [Config.Verify].
package config

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/internal/limitdefaults"
)

// Keys of the settings, as written in a config file.
const (
	KeyListen          = "listen"
	KeyDataDir         = "data_dir"
	KeyLogLevel        = "log.level"
	KeyLogFormat       = "log.format"
	KeyShutdownTimeout = "shutdown_timeout"

	KeyTLSCert               = "tls.cert_file"
	KeyTLSKey                = "tls.key_file"
	KeyTLSClientCA           = "tls.client_ca_file"
	KeyTokenFile             = "auth.token_file"
	KeyMetricsListen         = "metrics.listen"
	KeyGatewayListen         = "gateway.listen"
	KeyMaxRequestBytes       = "limits.max_request_bytes"
	KeyMaxSlots              = "limits.max_slots"
	KeyMaxJobs               = "limits.max_jobs"
	KeyMaxTasks              = "limits.max_tasks"
	KeyMaxSolveTime          = "limits.max_solve_time"
	KeyMaxSimulatedJobs      = "limits.max_simulated_jobs"
	KeyMaxNodes              = "limits.max_nodes"
	KeyMaxClusters           = "limits.max_clusters"
	KeyMaxTotalNodes         = "limits.max_total_nodes"
	KeyMaxTotalSlots         = "limits.max_total_slots"
	KeyMaxTotalJobs          = "limits.max_total_jobs"
	KeyMaxClusterTasks       = "limits.max_cluster_tasks"
	KeyMaxTotalTasks         = "limits.max_total_tasks"
	KeyMaxStartsPerHeartbeat = "limits.max_starts_per_heartbeat"
	KeyMaxMemoryMB           = "limits.max_memory_mb"
)

// EnvPrefix is the prefix of every environment variable optd reads; the rest of
// the name is the key upper-cased with "." replaced by "_" (OPTD_LOG_LEVEL).
const EnvPrefix = "OPTD"

// EnvConfigFile names the environment variable that names the config file
// when --config is not given.
const EnvConfigFile = EnvPrefix + "_CONFIG"

// Log levels and formats accepted by [Config.Verify].
var (
	LogLevels  = []string{"debug", "info", "warn", "error"}
	LogFormats = []string{"text", "json"}
)

// ErrInvalid is wrapped by every error [Config.Verify] and [Load] return for a
// bad value, file or key.
var ErrInvalid = errkind.New(errkind.Invalid, "config: invalid")

// Config is optd's effective configuration.
type Config struct {
	// Listen is the host:port the gRPC server binds ("127.0.0.1:0" picks a
	// free port).
	Listen string `json:"listen"`
	// DataDir is the directory holding the server's state; created (0o750)
	// if missing.
	DataDir string `json:"data_dir"`
	// Log configures the structured log on stderr.
	Log Log `json:"log"`
	// ShutdownTimeout bounds the graceful stop after SIGINT/SIGTERM; open
	// calls still running after it are cancelled.
	ShutdownTimeout time.Duration `json:"shutdown_timeout"`
	// TLS configures the server's TLS; empty files mean plaintext.
	TLS TLS `json:"tls"`
	// Auth configures the bearer token.
	Auth Auth `json:"auth"`
	// Metrics configures the Prometheus endpoint.
	Metrics Metrics `json:"metrics"`
	// Gateway configures the HTTP/JSON gateway.
	Gateway Gateway `json:"gateway"`
	// Limits bound request and problem sizes.
	Limits Limits `json:"limits"`
}

// TLS names the server's PEM files. CertFile and KeyFile go together;
// ClientCAFile (which needs them) makes the server require and verify client
// certificates signed by that CA (mTLS).
type TLS struct {
	CertFile     string `json:"cert_file"`
	KeyFile      string `json:"key_file"`
	ClientCAFile string `json:"client_ca_file"`
}

// Auth configures authentication.
type Auth struct {
	// TokenFile holds the bearer token (surrounding white space trimmed)
	// that every call but health checks must carry; empty: no token.
	TokenFile string `json:"token_file"`
}

// Metrics configures observability.
type Metrics struct {
	// Listen is the host:port of the HTTP server exposing /metrics; empty
	// disables it.
	Listen string `json:"listen"`
}

// Gateway configures the HTTP/JSON gateway (grpc-gateway) of the gRPC API.
type Gateway struct {
	// Listen is its host:port (same TLS and token as the gRPC server);
	// empty disables it.
	Listen string `json:"listen"`
}

// Limits bound request and problem sizes (see server.Limits); each must be
// greater than 0.
type Limits struct {
	MaxRequestBytes       int           `json:"max_request_bytes"`
	MaxSlots              int           `json:"max_slots"`
	MaxJobs               int           `json:"max_jobs"`
	MaxTasks              int           `json:"max_tasks"`
	MaxSolveTime          time.Duration `json:"max_solve_time"`
	MaxSimulatedJobs      int           `json:"max_simulated_jobs"`
	MaxNodes              int           `json:"max_nodes"`
	MaxClusters           int           `json:"max_clusters"`
	MaxTotalNodes         int           `json:"max_total_nodes"`
	MaxTotalSlots         int           `json:"max_total_slots"`
	MaxTotalJobs          int           `json:"max_total_jobs"`
	MaxClusterTasks       int           `json:"max_cluster_tasks"`
	MaxTotalTasks         int           `json:"max_total_tasks"`
	MaxStartsPerHeartbeat int           `json:"max_starts_per_heartbeat"`
	// MaxMemoryMB bounds the memory a command-line computation is
	// estimated to need before it starts (the server bounds its work by
	// the other limits).
	MaxMemoryMB int `json:"max_memory_mb"`
}

// Log configures logging.
type Log struct {
	// Level is one of [LogLevels].
	Level string `json:"level"`
	// Format is one of [LogFormats].
	Format string `json:"format"`
}

// Default returns the built-in defaults; they are also the defaults the
// command-line flags show in --help.
func Default() Config {
	return Config{
		Listen:          "127.0.0.1:7443",
		DataDir:         "optd-data",
		Log:             Log{Level: "info", Format: "text"},
		ShutdownTimeout: 10 * time.Second,
		Limits: Limits{
			MaxRequestBytes:       limitdefaults.MaxRequestBytes,
			MaxSlots:              limitdefaults.MaxSlots,
			MaxJobs:               limitdefaults.MaxJobs,
			MaxTasks:              limitdefaults.MaxTasks,
			MaxSolveTime:          limitdefaults.MaxSolveTime,
			MaxSimulatedJobs:      limitdefaults.MaxSimulatedJobs,
			MaxNodes:              limitdefaults.MaxNodes,
			MaxClusters:           limitdefaults.MaxClusters,
			MaxTotalNodes:         limitdefaults.MaxTotalNodes,
			MaxTotalSlots:         limitdefaults.MaxTotalSlots,
			MaxTotalJobs:          limitdefaults.MaxTotalJobs,
			MaxClusterTasks:       limitdefaults.MaxClusterTasks,
			MaxTotalTasks:         limitdefaults.MaxTotalTasks,
			MaxStartsPerHeartbeat: limitdefaults.MaxStartsPerHeartbeat,
			MaxMemoryMB:           limitdefaults.MaxMemoryMB,
		},
	}
}

// FieldError says which key has which bad value and why.
type FieldError struct {
	Key    string // e.g. "log.level"
	Value  string // the offending value as given
	Reason string // e.g. "must be one of debug, info, warn, error"
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s %q: %s", e.Key, e.Value, e.Reason)
}

// Unwrap lets errors.Is(err, ErrInvalid) match.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// VerifyError lists every bad field [Config.Verify] found, in key order.
type VerifyError struct {
	Fields []*FieldError
}

// Error joins the field errors on one line after a "config: " prefix.
func (e *VerifyError) Error() string {
	msgs := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		msgs[i] = f.Error()
	}
	return "config: " + strings.Join(msgs, "; ")
}

// Unwrap returns the field errors, so errors.As finds a *FieldError and
// errors.Is finds ErrInvalid.
func (e *VerifyError) Unwrap() []error {
	errs := make([]error, len(e.Fields))
	for i, f := range e.Fields {
		errs[i] = f
	}
	return errs
}

// Verify checks every field and returns a *VerifyError naming each bad key
// and value, or nil.
func (c Config) Verify() error {
	var bad []*FieldError
	add := func(key, value, reason string) {
		bad = append(bad, &FieldError{Key: key, Value: value, Reason: reason})
	}
	if reason := checkHostPort(c.Listen); reason != "" {
		add(KeyListen, c.Listen, reason)
	}
	if strings.TrimSpace(c.DataDir) == "" {
		add(KeyDataDir, c.DataDir, "must not be empty")
	}
	if !oneOf(c.Log.Level, LogLevels) {
		add(KeyLogLevel, c.Log.Level, "must be one of "+strings.Join(LogLevels, ", "))
	}
	if !oneOf(c.Log.Format, LogFormats) {
		add(KeyLogFormat, c.Log.Format, "must be one of "+strings.Join(LogFormats, ", "))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		add(KeyTLSKey, c.TLS.KeyFile, "tls.cert_file and tls.key_file must be given together")
	}
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		add(KeyTLSClientCA, c.TLS.ClientCAFile, "needs tls.cert_file and tls.key_file (mTLS is TLS)")
	}
	if c.Metrics.Listen != "" {
		if reason := checkHostPort(c.Metrics.Listen); reason != "" {
			add(KeyMetricsListen, c.Metrics.Listen, reason)
		}
	}
	if c.Gateway.Listen != "" {
		if reason := checkHostPort(c.Gateway.Listen); reason != "" {
			add(KeyGatewayListen, c.Gateway.Listen, reason)
		}
	}
	for _, s := range settings {
		if !s.positive {
			continue
		}
		switch p := s.field(&c).(type) {
		case *int:
			if *p <= 0 {
				add(s.key, s.value(c), "must be greater than 0")
			}
		case *time.Duration:
			if *p <= 0 {
				add(s.key, s.value(c), "must be greater than 0")
			}
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.SortStableFunc(bad, func(a, b *FieldError) int { return cmp.Compare(keyOrder(a.Key), keyOrder(b.Key)) })
	return &VerifyError{Fields: bad}
}

// checkHostPort returns why s is not a host:port with a numeric port, or "".
// The host may be empty (all interfaces); port 0 asks the kernel for a free
// port.
func checkHostPort(s string) string {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return "must be host:port (" + strings.TrimPrefix(err.Error(), "address "+s+": ") + ")"
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "port must be a number from 0 to 65535"
	}
	return ""
}

func oneOf(s string, allowed []string) bool {
	for _, a := range allowed {
		if s == a {
			return true
		}
	}
	return false
}

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// FlagConfigFile is the name of the flag that names the config file.
const FlagConfigFile = "config"

// FileExts are the config file extensions [Load] accepts (the format follows
// the extension).
var FileExts = []string{".yaml", ".yml", ".json", ".toml"}

// setting is everything about one key but its name in a config file (the
// Key constants) and its default (Default): its flag, its usage text,
// the field of Config it sets (a *string, *int or *time.Duration, which
// also makes its flag's and its value's type), whether it must be greater
// than 0, and whether it is a flag of the server's commands. The
// environment variable is derived from the key (see [EnvVar]).
type setting struct {
	key, flag, usage string
	field            func(c *Config) any
	positive         bool
	server           bool
}

var settings = []setting{
	{KeyListen, "listen", "gRPC listen address host:port", func(c *Config) any { return &c.Listen }, false, true},
	{KeyDataDir, "data-dir", "directory for the server's state (created if missing)", func(c *Config) any { return &c.DataDir }, false, true},
	{KeyLogLevel, "log-level", "log level: " + strings.Join(LogLevels, ", "), func(c *Config) any { return &c.Log.Level }, false, false},
	{KeyLogFormat, "log-format", "log format on stderr: " + strings.Join(LogFormats, ", "), func(c *Config) any { return &c.Log.Format }, false, false},
	{KeyShutdownTimeout, "shutdown-timeout", "graceful shutdown limit before open calls are cancelled", func(c *Config) any { return &c.ShutdownTimeout }, true, true},
	{KeyTLSCert, "tls-cert", "PEM server certificate (with --tls-key: serve TLS)", func(c *Config) any { return &c.TLS.CertFile }, false, true},
	{KeyTLSKey, "tls-key", "PEM private key of --tls-cert", func(c *Config) any { return &c.TLS.KeyFile }, false, true},
	{KeyTLSClientCA, "tls-client-ca", "PEM CA bundle: require client certificates signed by it (mTLS)", func(c *Config) any { return &c.TLS.ClientCAFile }, false, true},
	{KeyTokenFile, "token-file", "file holding the bearer token calls must carry (health checks exempt)", func(c *Config) any { return &c.Auth.TokenFile }, false, true},
	{KeyMetricsListen, "metrics-listen", "host:port of the Prometheus /metrics endpoint (empty: off)", func(c *Config) any { return &c.Metrics.Listen }, false, true},
	{KeyGatewayListen, "gateway-listen", "host:port of the HTTP/JSON gateway, same TLS and token (empty: off)", func(c *Config) any { return &c.Gateway.Listen }, false, true},
	{KeyMaxRequestBytes, "max-request-bytes", "largest request accepted, in bytes", func(c *Config) any { return &c.Limits.MaxRequestBytes }, true, true},
	{KeyMaxSlots, "max-slots", "most reduce slots (and nodes) per cluster", func(c *Config) any { return &c.Limits.MaxSlots }, true, true},
	{KeyMaxJobs, "max-jobs", "most unfinished jobs per cluster", func(c *Config) any { return &c.Limits.MaxJobs }, true, true},
	{KeyMaxTasks, "max-tasks", "most tasks of one job (all stages) on a heartbeat cluster", func(c *Config) any { return &c.Limits.MaxTasks }, true, true},
	{KeyMaxSolveTime, "max-solve-time", "cap on an optimization call's run time and on building a cluster's placement policy", func(c *Config) any { return &c.Limits.MaxSolveTime }, true, true},
	{KeyMaxSimulatedJobs, "max-simulated-jobs", "most jobs × replications per simulation", func(c *Config) any { return &c.Limits.MaxSimulatedJobs }, true, true},
	{KeyMaxNodes, "max-nodes", "most nodes per cluster", func(c *Config) any { return &c.Limits.MaxNodes }, true, true},
	{KeyMaxClusters, "max-clusters", "most clusters", func(c *Config) any { return &c.Limits.MaxClusters }, true, true},
	{KeyMaxTotalNodes, "max-total-nodes", "most nodes of all clusters together", func(c *Config) any { return &c.Limits.MaxTotalNodes }, true, true},
	{KeyMaxTotalSlots, "max-total-slots", "most reduce slots of all clusters together", func(c *Config) any { return &c.Limits.MaxTotalSlots }, true, true},
	{KeyMaxTotalJobs, "max-total-jobs", "most unfinished jobs of all clusters together", func(c *Config) any { return &c.Limits.MaxTotalJobs }, true, true},
	{KeyMaxClusterTasks, "max-cluster-tasks", "most tasks of the active jobs of one cluster", func(c *Config) any { return &c.Limits.MaxClusterTasks }, true, true},
	{KeyMaxTotalTasks, "max-total-tasks", "most tasks of the active jobs of all clusters", func(c *Config) any { return &c.Limits.MaxTotalTasks }, true, true},
	{KeyMaxStartsPerHeartbeat, "max-starts-per-heartbeat", "most tasks one heartbeat starts", func(c *Config) any { return &c.Limits.MaxStartsPerHeartbeat }, true, true},
	{KeyMaxMemoryMB, "max-memory-mb", "memory a computation may need, in MiB (estimated before it starts; larger work is refused)", func(c *Config) any { return &c.Limits.MaxMemoryMB }, true, false},
}

// keyOrder is a key's position in settings (for sorting field errors).
func keyOrder(key string) int {
	for i, s := range settings {
		if s.key == key {
			return i
		}
	}
	return len(settings)
}

// Keys returns every setting's key in a fixed order.
func Keys() []string {
	keys := make([]string, len(settings))
	for i, s := range settings {
		keys[i] = s.key
	}
	return keys
}

// EnvVar returns the environment variable of key (OPTD_LOG_LEVEL for
// "log.level").
func EnvVar(key string) string { return EnvPrefix + "_" + envReplacer.Replace(strings.ToUpper(key)) }

var envReplacer = strings.NewReplacer(".", "_")

func lookup(key string) setting {
	for _, s := range settings {
		if s.key == key {
			return s
		}
	}
	panic(fmt.Sprintf("config: no setting with key %q", key))
}

// value returns the field of c that s sets, in the form a flag takes.
func (s setting) value(c Config) string {
	switch p := s.field(&c).(type) {
	case *string:
		return *p
	case *int:
		return strconv.Itoa(*p)
	case *time.Duration:
		return p.String()
	}
	panic(fmt.Sprintf("config: setting %q has a field of type %T", s.key, s.field(&c)))
}

// AddFlags registers on fs the flags of the given keys, showing the values in
// d as defaults. It panics on an unknown key.
func AddFlags(fs *pflag.FlagSet, d Config, keys ...string) {
	for _, key := range keys {
		s := lookup(key)
		usage := s.usage + " (env " + EnvVar(key) + ")"
		switch p := s.field(&d).(type) {
		case *time.Duration:
			fs.Duration(s.flag, *p, usage)
		case *int:
			fs.Int(s.flag, *p, usage)
		default:
			fs.String(s.flag, s.value(d), usage)
		}
	}
}

// ServerKeys are the settings of the gRPC server, which `optd serve` and
// `optd config` take as flags; the log settings are global flags.
var ServerKeys = func() []string {
	var keys []string
	for _, s := range settings {
		if s.server {
			keys = append(keys, s.key)
		}
	}
	return keys
}()

// AddFileFlag registers the --config flag on fs.
func AddFileFlag(fs *pflag.FlagSet) {
	fs.String(FlagConfigFile, "", "config file (.yaml, .yml, .json or .toml; env "+EnvConfigFile+")")
}

// Load layers flags > environment > config file > [Default] on v and returns
// the verified result. Flags are those of fs named by the settings and
// that were set on the command line; the config file is the value of the
// --config flag in fs if set, else of $OPTD_CONFIG, else none.
//
// v must be a fresh instance owned by the caller; Load configures its
// defaults, environment binding and config layer.
func Load(v *viper.Viper, fs *pflag.FlagSet) (Config, error) {
	d := Default()
	for _, s := range settings {
		v.SetDefault(s.key, s.value(d))
		if f := fs.Lookup(s.flag); f != nil {
			if err := v.BindPFlag(s.key, f); err != nil {
				return Config{}, fmt.Errorf("config: binding --%s: %w", s.flag, err)
			}
		}
	}
	v.SetEnvPrefix(EnvPrefix)
	v.SetEnvKeyReplacer(envReplacer)
	v.AutomaticEnv()

	if path := configFile(fs); path != "" {
		settings, err := readFile(path)
		if err != nil {
			return Config{}, err
		}
		if err := v.MergeConfigMap(settings); err != nil {
			return Config{}, &FileError{Path: path, Err: err}
		}
	}

	c, err := decode(v)
	if err != nil {
		return Config{}, err
	}
	if err := c.Verify(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// configFile returns the config file named by --config or $OPTD_CONFIG.
func configFile(fs *pflag.FlagSet) string {
	if f := fs.Lookup(FlagConfigFile); f != nil && f.Changed {
		return f.Value.String()
	}
	return os.Getenv(EnvConfigFile)
}

// FileError is a config file that cannot be read, parsed or has a bad key.
type FileError struct {
	Path string
	Err  error
}

// Error is one line: parsers' multi-line messages are joined with spaces.
func (e *FileError) Error() string {
	return fmt.Sprintf("config file %q: %s", e.Path, strings.Join(strings.Fields(e.Err.Error()), " "))
}

// Unwrap returns the cause (an fs error, a parse error or an *UnknownKeyError).
func (e *FileError) Unwrap() error { return e.Err }

// UnknownKeyError is a key in a config file that optd does not know.
type UnknownKeyError struct {
	Key string
}

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("unknown key %q (known keys: %s)", e.Key, strings.Join(Keys(), ", "))
}

// Is reports that an unknown key is an invalid config.
func (e *UnknownKeyError) Is(target error) bool { return target == ErrInvalid }

// invalidError marks a cause as ErrInvalid without adding to its message.
type invalidError struct{ err error }

func (e invalidError) Error() string        { return e.err.Error() }
func (e invalidError) Unwrap() error        { return e.err }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

// readFile parses the config file at path and returns its settings after
// rejecting any key that is not a setting.
func readFile(path string) (map[string]any, error) {
	ext := strings.ToLower(filepath.Ext(path))
	if !slices.Contains(FileExts, ext) {
		return nil, &FileError{Path: path, Err: invalidError{fmt.Errorf("extension %q is not one of %s",
			ext, strings.Join(FileExts, ", "))}}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in FileError
		}
		return nil, &FileError{Path: path, Err: err}
	}
	fv := viper.New()
	fv.SetConfigType(strings.TrimPrefix(ext, "."))
	if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
		var pe viper.ConfigParseError
		if errors.As(err, &pe) {
			err = pe.Unwrap() // drop viper's "While parsing config:" prefix
		}
		return nil, &FileError{Path: path, Err: invalidError{err}}
	}
	known := Keys()
	for _, key := range fv.AllKeys() {
		if slices.Contains(known, key) {
			continue
		}
		if isTable(key) {
			if m, ok := fv.Get(key).(map[string]any); ok && len(m) == 0 {
				continue // an empty table such as "log: {}"
			}
			return nil, &FileError{Path: path, Err: &FieldError{Key: key, Value: fmt.Sprint(fv.Get(key)),
				Reason: "must be a table of " + strings.Join(tableKeys(key), ", ")}}
		}
		return nil, &FileError{Path: path, Err: &UnknownKeyError{Key: key}}
	}
	return fv.AllSettings(), nil
}

// isTable reports whether key is the table of some dotted keys ("log").
func isTable(key string) bool { return len(tableKeys(key)) > 0 }

func tableKeys(table string) []string {
	var sub []string
	for _, k := range Keys() {
		if rest, ok := strings.CutPrefix(k, table+"."); ok {
			sub = append(sub, rest)
		}
	}
	return sub
}

// decode reads every setting from v into a Config, reporting each value of
// the wrong type with its key.
func decode(v *viper.Viper) (Config, error) {
	var c Config
	var bad []*FieldError
	for _, s := range settings {
		var err *FieldError
		switch p := s.field(&c).(type) {
		case *string:
			*p, err = stringValue(s.key, v.Get(s.key))
		case *int:
			*p, err = intValue(s.key, v.Get(s.key))
		case *time.Duration:
			*p, err = durationValue(s.key, v.Get(s.key))
		}
		if err != nil {
			bad = append(bad, err)
		}
	}
	if len(bad) > 0 {
		return Config{}, &VerifyError{Fields: bad}
	}
	return c, nil
}

func stringValue(key string, val any) (string, *FieldError) {
	if s, ok := val.(string); ok {
		return s, nil
	}
	return "", &FieldError{Key: key, Value: fmt.Sprint(val), Reason: "must be a string"}
}

// durationValue accepts a time.Duration or a string time.ParseDuration
// understands. Bare numbers are rejected rather than read as nanoseconds.
func durationValue(key string, val any) (time.Duration, *FieldError) {
	switch t := val.(type) {
	case time.Duration:
		return t, nil
	case string:
		d, err := time.ParseDuration(t)
		if err != nil {
			return 0, &FieldError{Key: key, Value: t, Reason: `must be a duration like "10s" or "1m30s"`}
		}
		return d, nil
	}
	return 0, &FieldError{Key: key, Value: fmt.Sprint(val), Reason: `must be a duration string with a unit, like "10s"`}
}

// intValue accepts an integer (of any Go integer type, or a float64 with an
// integral value as JSON gives) or a decimal string.
func intValue(key string, val any) (int, *FieldError) {
	switch t := val.(type) {
	case int:
		return t, nil
	case int64:
		return int(t), nil
	case float64:
		if t == float64(int(t)) {
			return int(t), nil
		}
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil {
			return n, nil
		}
		return 0, &FieldError{Key: key, Value: t, Reason: "must be an integer"}
	}
	return 0, &FieldError{Key: key, Value: fmt.Sprint(val), Reason: "must be an integer"}
}

// MarshalJSON writes the limits with the solve time as a duration string.
func (l Limits) MarshalJSON() ([]byte, error) {
	type plain Limits
	return json.Marshal(struct {
		plain
		MaxSolveTime string `json:"max_solve_time"`
	}{plain(l), l.MaxSolveTime.String()})
}

// MarshalJSON writes c with the config file's keys (snake_case, log as a
// table) and the timeout as a duration string ("10s"), so that the output of
// `optd config` is itself a valid config file.
func (c Config) MarshalJSON() ([]byte, error) {
	type plain Config // no MarshalJSON method: no recursion
	return json.Marshal(struct {
		plain
		ShutdownTimeout string `json:"shutdown_timeout"` // shadows plain's field
	}{plain(c), c.ShutdownTimeout.String()})
}

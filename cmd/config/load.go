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

// setting ties a key to its flag and its usage text; the environment variable
// is derived from the key (see [EnvVar]).
type setting struct {
	key, flag, usage string
}

var settings = []setting{
	{KeyListen, "listen", "gRPC listen address host:port"},
	{KeyDataDir, "data-dir", "directory for the server's state (created if missing)"},
	{KeyLogLevel, "log-level", "log level: " + strings.Join(LogLevels, ", ")},
	{KeyLogFormat, "log-format", "log format on stderr: " + strings.Join(LogFormats, ", ")},
	{KeyShutdownTimeout, "shutdown-timeout", "graceful shutdown limit before open calls are cancelled"},
	{KeyTLSCert, "tls-cert", "PEM server certificate (with --tls-key: serve TLS)"},
	{KeyTLSKey, "tls-key", "PEM private key of --tls-cert"},
	{KeyTLSClientCA, "tls-client-ca", "PEM CA bundle: require client certificates signed by it (mTLS)"},
	{KeyTokenFile, "token-file", "file holding the bearer token calls must carry (health checks exempt)"},
	{KeyMetricsListen, "metrics-listen", "host:port of the Prometheus /metrics endpoint (empty: off)"},
	{KeyMaxRequestBytes, "max-request-bytes", "largest request accepted, in bytes"},
	{KeyMaxSlots, "max-slots", "most reduce slots (and nodes) per cluster"},
	{KeyMaxJobs, "max-jobs", "most unfinished jobs per cluster"},
	{KeyMaxTasks, "max-tasks", "most tasks of one job (all stages) on a heartbeat cluster"},
	{KeyMaxSolveTime, "max-solve-time", "cap on an optimization call's run time"},
	{KeyMaxSimulatedJobs, "max-simulated-jobs", "most jobs × replications per simulation"},
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

// durationKeys and intKeys are the settings that are not strings.
var (
	durationKeys = []string{KeyShutdownTimeout, KeyMaxSolveTime}
	intKeys      = []string{KeyMaxRequestBytes, KeyMaxSlots, KeyMaxJobs, KeyMaxTasks, KeyMaxSimulatedJobs}
)

// Keys returns every setting's key in a fixed order.
func Keys() []string {
	keys := make([]string, len(settings))
	for i, s := range settings {
		keys[i] = s.key
	}
	return keys
}

// FlagName returns the command-line flag of key; it panics on an unknown key
// (a programming error).
func FlagName(key string) string { return lookup(key).flag }

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

// value returns the field of c that key names, in the form a flag takes.
func (c Config) value(key string) string {
	switch key {
	case KeyListen:
		return c.Listen
	case KeyDataDir:
		return c.DataDir
	case KeyLogLevel:
		return c.Log.Level
	case KeyLogFormat:
		return c.Log.Format
	case KeyShutdownTimeout:
		return c.ShutdownTimeout.String()
	case KeyTLSCert:
		return c.TLS.CertFile
	case KeyTLSKey:
		return c.TLS.KeyFile
	case KeyTLSClientCA:
		return c.TLS.ClientCAFile
	case KeyTokenFile:
		return c.Auth.TokenFile
	case KeyMetricsListen:
		return c.Metrics.Listen
	case KeyMaxRequestBytes:
		return strconv.Itoa(c.Limits.MaxRequestBytes)
	case KeyMaxSlots:
		return strconv.Itoa(c.Limits.MaxSlots)
	case KeyMaxJobs:
		return strconv.Itoa(c.Limits.MaxJobs)
	case KeyMaxTasks:
		return strconv.Itoa(c.Limits.MaxTasks)
	case KeyMaxSolveTime:
		return c.Limits.MaxSolveTime.String()
	case KeyMaxSimulatedJobs:
		return strconv.Itoa(c.Limits.MaxSimulatedJobs)
	}
	panic(fmt.Sprintf("config: no setting with key %q", key))
}

// AddFlags registers on fs the flags of the given keys, showing the values in
// d as defaults. It panics on an unknown key.
func AddFlags(fs *pflag.FlagSet, d Config, keys ...string) {
	for _, key := range keys {
		s := lookup(key)
		usage := s.usage + " (env " + EnvVar(key) + ")"
		switch {
		case slices.Contains(durationKeys, key):
			dv, _ := time.ParseDuration(d.value(key))
			fs.Duration(s.flag, dv, usage)
		case slices.Contains(intKeys, key):
			iv, _ := strconv.Atoi(d.value(key))
			fs.Int(s.flag, iv, usage)
		default:
			fs.String(s.flag, d.value(key), usage)
		}
	}
}

// ServerKeys are the settings of the gRPC server, which `optd serve` and
// `optd config` take as flags; the log settings are global flags.
var ServerKeys = []string{KeyListen, KeyDataDir, KeyShutdownTimeout,
	KeyTLSCert, KeyTLSKey, KeyTLSClientCA, KeyTokenFile, KeyMetricsListen,
	KeyMaxRequestBytes, KeyMaxSlots, KeyMaxJobs, KeyMaxTasks, KeyMaxSolveTime, KeyMaxSimulatedJobs}

// AddFileFlag registers the --config flag on fs.
func AddFileFlag(fs *pflag.FlagSet) {
	fs.String(FlagConfigFile, "", "config file (.yaml, .yml, .json or .toml; env "+EnvConfigFile+")")
}

// Load layers flags > environment > config file > [Default] on v and returns
// the verified result. Flags are those of fs whose names [FlagName] gives and
// that were set on the command line; the config file is the value of the
// --config flag in fs if set, else of $OPTD_CONFIG, else none.
//
// v must be a fresh instance owned by the caller; Load configures its
// defaults, environment binding and config layer.
func Load(v *viper.Viper, fs *pflag.FlagSet) (Config, error) {
	d := Default()
	for _, s := range settings {
		v.SetDefault(s.key, d.value(s.key))
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
	str := func(key string) string {
		s, err := stringValue(key, v.Get(key))
		if err != nil {
			bad = append(bad, err)
		}
		return s
	}
	c.Listen = str(KeyListen)
	c.DataDir = str(KeyDataDir)
	c.Log.Level = str(KeyLogLevel)
	c.Log.Format = str(KeyLogFormat)
	c.TLS.CertFile = str(KeyTLSCert)
	c.TLS.KeyFile = str(KeyTLSKey)
	c.TLS.ClientCAFile = str(KeyTLSClientCA)
	c.Auth.TokenFile = str(KeyTokenFile)
	c.Metrics.Listen = str(KeyMetricsListen)
	dur := func(key string) time.Duration {
		d, err := durationValue(key, v.Get(key))
		if err != nil {
			bad = append(bad, err)
		}
		return d
	}
	num := func(key string) int {
		n, err := intValue(key, v.Get(key))
		if err != nil {
			bad = append(bad, err)
		}
		return n
	}
	c.ShutdownTimeout = dur(KeyShutdownTimeout)
	c.Limits.MaxSolveTime = dur(KeyMaxSolveTime)
	c.Limits.MaxRequestBytes = num(KeyMaxRequestBytes)
	c.Limits.MaxSlots = num(KeyMaxSlots)
	c.Limits.MaxJobs = num(KeyMaxJobs)
	c.Limits.MaxTasks = num(KeyMaxTasks)
	c.Limits.MaxSimulatedJobs = num(KeyMaxSimulatedJobs)
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

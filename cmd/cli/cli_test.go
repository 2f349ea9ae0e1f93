package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/config"
)

func clearEnv(t *testing.T) {
	t.Helper()
	for _, key := range config.Keys() {
		t.Setenv(config.EnvVar(key), "")
	}
	t.Setenv(config.EnvConfigFile, "")
}

// probe is a test verb that records the Env it ran with, logs one debug and
// one info line and prints its config as JSON.
type probe struct {
	name string
	seen *Env
	err  error // returned by RunE when set
}

func (p *probe) verb(env *Env) *cobra.Command {
	c := &cobra.Command{
		Use:  p.name,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.seen = env
			env.Logger.Debug("probe debug")
			env.Logger.Info("probe info", "verb", p.name)
			if p.err != nil {
				return p.err
			}
			return WriteJSON(cmd.OutOrStdout(), env.Config)
		},
	}
	config.AddFlags(c.Flags(), config.Default(), config.ServerKeys...)
	return c
}

type result struct {
	code           int
	stdout, stderr string
}

func run(t *testing.T, verbs []Verb, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), NewRoot(verbs...), args, &out, &errb)
	return result{code, out.String(), errb.String()}
}

// errorLine checks that r failed with exactly one stderr line "optd: ..."
// containing every want, and nothing on stdout.
func errorLine(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.code != 1 {
		t.Errorf("exit code = %d, want 1", r.code)
	}
	if r.stdout != "" {
		t.Errorf("stdout = %q, want empty", r.stdout)
	}
	if !strings.HasPrefix(r.stderr, "optd: ") || !strings.HasSuffix(r.stderr, "\n") ||
		strings.Count(r.stderr, "\n") != 1 {
		t.Fatalf("stderr = %q, want one line \"optd: ...\"", r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not contain %q", r.stderr, w)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	clearEnv(t)
	p := &probe{name: "probe"}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no verb", nil, []string{"no command given", "see 'optd --help'"}},
		{"unknown verb", []string{"frobnicate"}, []string{`unknown command "frobnicate"`, "see 'optd --help'"}},
		{"suggestion", []string{"prbe"}, []string{`did you mean "probe"?`}},
		{"unknown global flag", []string{"--nope"}, []string{"unknown flag: --nope", "see 'optd --help'"}},
		{"unknown verb flag", []string{"probe", "--nope"}, []string{"unknown flag: --nope", "see 'optd probe --help'"}},
		{"bad flag value", []string{"probe", "--shutdown-timeout", "soon"}, []string{"soon", "see 'optd probe --help'"}},
		{"stray argument", []string{"probe", "extra"}, []string{`unexpected argument "extra"`, "see 'optd probe --help'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := run(t, []Verb{p.verb}, tt.args...)
			errorLine(t, r, tt.want...)
			if p.seen != nil {
				t.Error("the verb ran despite a usage error")
			}
		})
	}
}

func TestVerbErrorIsOneLine(t *testing.T) {
	clearEnv(t)
	p := &probe{name: "probe", err: errors.New("first line\n  second line\n\n")}
	r := run(t, []Verb{p.verb}, "--log-level", "error", "probe") // no log lines
	errorLine(t, r, "optd: first line second line")
}

func TestConfigErrorIsOneLine(t *testing.T) {
	clearEnv(t)
	t.Setenv("OPTD_LOG_FORMAT", "xml")
	p := &probe{name: "probe"}
	r := run(t, []Verb{p.verb}, "probe", "--listen", "nowhere")
	errorLine(t, r, `listen "nowhere"`, `log.format "xml"`)
}

func TestVerbSeesConfigAndLogger(t *testing.T) {
	clearEnv(t)
	t.Setenv("OPTD_DATA_DIR", "from-env")
	a, b := &probe{name: "a"}, &probe{name: "b"}
	// Two verbs register the same config flags; only the running one's flags
	// may count.
	r := run(t, []Verb{a.verb, b.verb}, "--log-level", "debug", "--log-format", "json", "b", "--listen", "127.0.0.1:9")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if a.seen != nil || b.seen == nil {
		t.Fatal("the wrong verb ran")
	}
	want := config.Default()
	want.Listen = "127.0.0.1:9"
	want.DataDir = "from-env"
	want.Log = config.Log{Level: "debug", Format: "json"}
	if b.seen.Config != want {
		t.Errorf("Env.Config = %+v, want %+v", b.seen.Config, want)
	}
	// stdout holds exactly the JSON result.
	var got map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout %q is not one JSON value: %v", r.stdout, err)
	}
	if got["listen"] != "127.0.0.1:9" {
		t.Errorf("stdout listen = %v", got["listen"])
	}
	// stderr holds the JSON log lines, debug included.
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 2 {
		t.Fatalf("stderr = %q, want 2 log lines", r.stderr)
	}
	for i, msg := range []string{"probe debug", "probe info"} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", lines[i], err)
		}
		if rec["msg"] != msg {
			t.Errorf("log line %d msg = %v, want %q", i, rec["msg"], msg)
		}
	}
}

func TestDefaultLogLevelHidesDebug(t *testing.T) {
	clearEnv(t)
	p := &probe{name: "probe"}
	r := run(t, []Verb{p.verb}, "probe")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "probe debug") || !strings.Contains(r.stderr, "level=INFO msg=\"probe info\" verb=probe") {
		t.Errorf("stderr = %q, want only the info line in text format", r.stderr)
	}
}

func TestHelpGoesToStdoutAndSucceeds(t *testing.T) {
	clearEnv(t)
	p := &probe{name: "probe"}
	r := run(t, []Verb{p.verb}, "--help")
	if r.code != 0 || !strings.Contains(r.stdout, "probe") || r.stderr != "" {
		t.Errorf("--help: code %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

func TestExactArgs(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	check := ExactArgs(2)
	if err := check(cmd, []string{"a", "b"}); err != nil {
		t.Errorf("two args: %v", err)
	}
	var ue *UsageError
	if err := check(cmd, []string{"a"}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "want 2 argument(s), got 1") {
		t.Errorf("one arg: %v, want a UsageError", err)
	}
}

func TestOneLine(t *testing.T) {
	tests := map[string]string{
		"plain":                    "plain",
		"a\nb":                     "a b",
		"  a  \n\n\t b \n":         "a b",
		"unknown command\n\nDid\n": "unknown command Did",
	}
	for in, want := range tests {
		if got := oneLine(in); got != want {
			t.Errorf("oneLine(%q) = %q, want %q", in, got, want)
		}
	}
}

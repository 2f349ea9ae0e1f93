// Package cli is the frame every optd subcommand plugs into: the root command,
// its global flags, configuration loading, logging, JSON output and the
// one-line error convention.
//
// # Adding a verb
//
// Each verb lives in its own package /cmd/<verb> (for example cmd/serve)
// exporting
//
//	func NewCommand(env *cli.Env) *cobra.Command
//
// and is registered by adding that function to the list in
// [github.com/optd/optd/cmd.NewRootCommand] — one line. The verb's command:
//
//   - sets Args (use [NoArgs] or [ExactArgs] so a stray argument is a usage
//     error that points at --help);
//   - does its work in RunE and returns errors instead of printing them; the
//     root prints one line "optd: <message>" on stderr and exits 1 (see
//     [Run]). Errors about user input name the file, field and value;
//   - writes its JSON result with [WriteJSON] to cmd.OutOrStdout() and nothing
//     else there; logs go through env.Logger and progress to
//     cmd.ErrOrStderr();
//   - reads env.Config and env.Logger only inside RunE: the root loads them in
//     its PersistentPreRunE, after flags are parsed, so a verb must not define
//     PersistentPreRun(E) of its own (cobra would run only the nearest one);
//     use PreRunE instead;
//   - registers the flags of config settings it takes with config.AddFlags
//     (they join the flags > env > file > default layering by name); verb-only
//     flags are plain cobra flags;
//   - takes ctx from cmd.Context() and passes it to long-running work.
//
// The global flags --config, --log-level and --log-format are persistent and
// so available to every verb.
package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/optd/optd/cmd/config"
)

// Name is the program name used in messages.
const Name = "optd"

// Env is what the root hands every verb. Its fields are set by the root's
// PersistentPreRunE, i.e. before the verb's RunE runs and after flags are
// parsed; they are zero while commands are being built.
type Env struct {
	// Config is the effective, verified configuration.
	Config config.Config
	// Logger writes structured logs to the command's stderr at the
	// configured level and format.
	Logger *slog.Logger
}

// Verb builds one subcommand; see the package documentation.
type Verb func(env *Env) *cobra.Command

// NewRoot returns the optd root command with the given verbs registered in
// order. Callers normally use cmd.NewRootCommand, which holds the verb list.
func NewRoot(verbs ...Verb) *cobra.Command {
	env := &Env{Logger: slog.New(slog.DiscardHandler)}
	root := &cobra.Command{
		Use:   Name,
		Short: "optd: optimal task placement for MapReduce/YARN schedulers",
		Long: Name + ` computes optimal reduce placement thresholds, exact initial task
assignments and policy bounds, and serves them to a cluster scheduler over gRPC.

Settings come from flags, then OPTD_* environment variables, then the config
file (--config or OPTD_CONFIG), then built-in defaults; ` + "`optd config`" + ` prints
the result. JSON results go to stdout; logs and errors to stderr.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          rootArgs,
		// Unreachable past rootArgs; present so that the root is runnable
		// and its Args are checked rather than cobra's defaults.
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf(cmd, "no command given")
		},
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return env.load(cmd)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SuggestionsMinimumDistance = 2 // cobra's default, which SuggestionsFor does not apply itself
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &UsageError{Command: cmd.CommandPath(), Err: err}
	})
	config.AddFileFlag(root.PersistentFlags())
	config.AddFlags(root.PersistentFlags(), config.Default(), config.KeyLogLevel, config.KeyLogFormat)
	for _, verb := range verbs {
		root.AddCommand(verb(env))
	}
	return root
}

// load fills env from the flags of the command being run.
func (e *Env) load(cmd *cobra.Command) error {
	c, err := config.Load(viper.New(), cmd.Flags())
	if err != nil {
		return err
	}
	e.Config = c
	e.Logger = NewLogger(cmd.ErrOrStderr(), c.Log)
	return nil
}

// NewLogger returns a slog logger writing to w in the configured format at the
// configured level. The level and format must have passed config.Verify.
func NewLogger(w io.Writer, l config.Log) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		panic(fmt.Sprintf("cli: unverified log level %q", l.Level))
	}
	opts := &slog.HandlerOptions{Level: level}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return usageErrorf(cmd, "no command given")
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
	}
	return usageErrorf(cmd, "%s", msg)
}

// UsageError is a command line that does not parse: an unknown verb, flag or
// argument. Its message ends by pointing at the command's --help.
type UsageError struct {
	Command string // e.g. "optd serve"
	Err     error
}

func (e *UsageError) Error() string {
	return fmt.Sprintf("%v; see '%s --help'", e.Err, e.Command)
}

func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(cmd *cobra.Command, format string, args ...any) error {
	return &UsageError{Command: cmd.CommandPath(), Err: fmt.Errorf(format, args...)}
}

// NoArgs is a cobra.PositionalArgs that rejects any argument with a
// [UsageError].
func NoArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf(cmd, "unexpected argument %q", args[0])
	}
	return nil
}

// ExactArgs is cobra.ExactArgs returning a [UsageError].
func ExactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf(cmd, "want %d argument(s), got %d", n, len(args))
		}
		return nil
	}
}

// WriteJSON writes v as indented JSON and a newline to w (a verb passes
// cmd.OutOrStdout()).
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("cli: writing JSON: %w", err)
	}
	return nil
}

// Run executes root with args and returns the process exit code: 0 on
// success, 1 after printing the error as one line "optd: <message>" on
// stderr. cmd/optd's main is Run on os.Args.
func Run(ctx context.Context, root *cobra.Command, args []string, stdout, stderr io.Writer) int {
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintf(stderr, "%s: %s\n", Name, UserMessage(err))
		return 1
	}
	return 0
}

// oneLine joins the non-blank lines of msg with single spaces.
func oneLine(msg string) string {
	var parts []string
	for _, line := range strings.Split(msg, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, " ")
}

// RunCaptured runs args through the root of verbs exactly as Run does and
// returns what the command wrote to stdout and stderr and its exit code
// (the verbs' tests drive the real root frame with it).
func RunCaptured(ctx context.Context, args []string, verbs ...Verb) (stdout, stderr string, code int) {
	var out, errb bytes.Buffer
	code = Run(ctx, NewRoot(verbs...), args, &out, &errb)
	return out.String(), errb.String(), code
}

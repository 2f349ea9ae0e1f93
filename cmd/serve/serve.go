// Package serve implements `optd serve`: the gRPC server of package
// [github.com/optd/optd/server] configured from the effective configuration,
// stopped gracefully by SIGINT or SIGTERM. It prints nothing on stdout; it
// logs "listening" (with the bound address) and "stopped" on stderr.
package serve

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
	"github.com/optd/optd/server"
	"github.com/optd/optd/solver/lp"
)

// NewCommand returns the `optd serve` command.
func NewCommand(env *cli.Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the optd gRPC API (health and reflection included)",
		Long: `Serve the optd gRPC API on --listen until SIGINT or SIGTERM.

The standard health service reports NOT_SERVING until the startup self-checks
pass, then SERVING for "" and every service; on a signal it reports NOT_SERVING,
lets open calls finish for at most --shutdown-timeout, cancels the rest and
exits 0. Nothing is printed on stdout.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			srv, err := server.New(Options(env))
			if err != nil {
				return err
			}
			return srv.Run(ctx)
		},
	}
	config.AddFlags(c.Flags(), config.Default(), config.ServerKeys...)
	return c
}

// Options maps the effective configuration to the server's options.
func Options(env *cli.Env) server.Options {
	return server.Options{
		Listen:          env.Config.Listen,
		DataDir:         env.Config.DataDir,
		ShutdownTimeout: env.Config.ShutdownTimeout,
		Logger:          env.Logger,
		SelfChecks:      SelfChecks(env.Config),
	}
}

// SelfChecks are the checks `optd serve` runs before it reports SERVING.
func SelfChecks(c config.Config) []server.SelfCheck {
	return []server.SelfCheck{
		server.DataDirWritable(c.DataDir),
		{Name: "clp-lp", Check: lp.SelfCheck},
	}
}

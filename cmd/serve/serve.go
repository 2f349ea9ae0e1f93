// Package serve implements `optd serve`: the gRPC server of package
// [github.com/optd/optd/server] configured from the effective configuration,
// stopped gracefully by SIGINT or SIGTERM. It prints nothing on stdout; it
// logs "listening" (with the bound address) and "stopped" on stderr.
package serve

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
	"github.com/optd/optd/server"
	"github.com/optd/optd/solver/lp"
	"github.com/optd/optd/store"
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
			return Run(ctx, env)
		},
	}
	config.AddFlags(c.Flags(), config.Default(), config.ServerKeys...)
	return c
}

// Run serves until ctx is cancelled: it opens the store in the data
// directory (failing if another optd holds it, or if the store is damaged;
// logging how long the open took and what it recovered), starts the
// metrics endpoint if configured, and serves ClusterService and
// OptimizeService with TLS, the bearer token and the limits of the
// configuration.
func Run(ctx context.Context, env *cli.Env) error {
	cfg := env.Config
	opts := Options(env)
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	start := time.Now()
	st, err := store.OpenWith(cfg.DataDir, store.Options{LockTimeout: time.Second, Logger: env.Logger})
	if err != nil {
		return err
	}
	defer st.Close()
	r := st.Recovered()
	env.Logger.Info("store opened", "data_dir", cfg.DataDir, "duration_ms", float64(time.Since(start).Microseconds())/1000,
		"recovered_after_a_crash", r.Crash, "torn_tail_bytes", r.TornTailBytes, "migrated_from_format", r.MigratedFrom)
	opts.Store = st
	if cfg.TLS.CertFile != "" {
		if opts.TLS, err = server.LoadTLS(cfg.TLS.CertFile, cfg.TLS.KeyFile, cfg.TLS.ClientCAFile); err != nil {
			return err
		}
	}
	if cfg.Auth.TokenFile != "" {
		if opts.Token, err = server.ReadToken(cfg.Auth.TokenFile); err != nil {
			return err
		}
	}
	opts.Metrics = server.NewMetrics()
	if cfg.Metrics.Listen != "" {
		if _, err := server.ServeMetrics(ctx, cfg.Metrics.Listen, opts.Metrics, env.Logger, opts.TLS, opts.Token); err != nil {
			return fmt.Errorf("metrics.listen: %w", err)
		}
	}
	clusters, err := server.NewClusterService(st, opts.Limits, opts.Metrics, env.Logger)
	if err != nil {
		return err
	}
	optimize := server.NewOptimizeService(opts.Limits, opts.Metrics)
	opts.Register = append(opts.Register, clusters.Register, optimize.Register)
	srv, err := server.New(opts)
	if err != nil {
		return err
	}
	return srv.Run(ctx)
}

// Options maps the effective configuration to the server's options.
func Options(env *cli.Env) server.Options {
	return server.Options{
		Listen:          env.Config.Listen,
		GatewayListen:   env.Config.Gateway.Listen,
		DataDir:         env.Config.DataDir,
		ShutdownTimeout: env.Config.ShutdownTimeout,
		Logger:          env.Logger,
		SelfChecks:      SelfChecks(env.Config),
		Limits: server.Limits{
			MaxRequestBytes:       env.Config.Limits.MaxRequestBytes,
			MaxSlots:              env.Config.Limits.MaxSlots,
			MaxJobs:               env.Config.Limits.MaxJobs,
			MaxTasks:              env.Config.Limits.MaxTasks,
			MaxSolveTime:          env.Config.Limits.MaxSolveTime,
			MaxSimulatedJobs:      env.Config.Limits.MaxSimulatedJobs,
			MaxNodes:              env.Config.Limits.MaxNodes,
			MaxClusters:           env.Config.Limits.MaxClusters,
			MaxTotalNodes:         env.Config.Limits.MaxTotalNodes,
			MaxTotalSlots:         env.Config.Limits.MaxTotalSlots,
			MaxTotalJobs:          env.Config.Limits.MaxTotalJobs,
			MaxClusterTasks:       env.Config.Limits.MaxClusterTasks,
			MaxTotalTasks:         env.Config.Limits.MaxTotalTasks,
			MaxStartsPerHeartbeat: env.Config.Limits.MaxStartsPerHeartbeat,
		},
	}
}

// SelfChecks are the checks `optd serve` runs before it reports SERVING.
func SelfChecks(c config.Config) []server.SelfCheck {
	return []server.SelfCheck{
		server.DataDirWritable(c.DataDir),
		{Name: "clp-lp", Check: lp.SelfCheck},
	}
}

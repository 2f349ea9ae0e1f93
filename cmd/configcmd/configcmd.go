// Package configcmd implements `optd config`: it prints the effective
// configuration (flags > OPTD_* environment > config file > defaults) as JSON
// with the config file's keys, so its output can itself serve as a config
// file. The package is not named after its verb, as the convention in
// [github.com/optd/optd/cmd/cli] asks, because cmd/config holds the typed
// Config.
package configcmd

import (
	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
)

// NewCommand returns the `optd config` command. It takes the server's flags
// too, so `optd config --listen X` shows what `optd serve --listen X` would use.
func NewCommand(env *cli.Env) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Print the effective configuration as JSON",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WriteJSON(cmd.OutOrStdout(), env.Config)
		},
	}
	config.AddFlags(c.Flags(), config.Default(), config.ServerKeys...)
	return c
}

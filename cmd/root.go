// Package cmd assembles the optd command line: [NewRootCommand] lists every
// verb. The frame (global flags, config loading, logging, errors) and the
// convention a verb follows are in package [github.com/optd/optd/cmd/cli];
// each verb is a package cmd/<verb>.
//
// The root lives here rather than in cli because it imports every verb and
// every verb imports cli.
package cmd

import (
	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/bound"
	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/configcmd"
	"github.com/optd/optd/cmd/formats"
	"github.com/optd/optd/cmd/ita"
	"github.com/optd/optd/cmd/replay"
	"github.com/optd/optd/cmd/search"
	"github.com/optd/optd/cmd/serve"
	"github.com/optd/optd/cmd/simulate"
	"github.com/optd/optd/cmd/storecmd"
	"github.com/optd/optd/cmd/thresholds"
	"github.com/optd/optd/cmd/version"
)

// NewRootCommand returns the optd root command with every verb registered.
// To add a verb, write package cmd/<verb> with
// func NewCommand(env *cli.Env) *cobra.Command and add it to this list.
func NewRootCommand() *cobra.Command {
	return cli.NewRoot(
		serve.NewCommand,
		configcmd.NewCommand,
		version.NewCommand,
		thresholds.NewCommand,
		ita.NewCommand,
		bound.NewCommand,
		simulate.NewCommand,
		search.NewCommand,
		replay.NewCommand,
		storecmd.NewCommand,
		formats.NewSchemaCommand,
		formats.NewExampleCommand,
	)
}

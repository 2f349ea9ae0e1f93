// Command optd is the optd command line; see `optd --help` and package
// github.com/optd/optd/cmd for the verbs.
package main

import (
	"context"
	"os"

	"github.com/optd/optd/cmd"
	"github.com/optd/optd/cmd/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), cmd.NewRootCommand(), os.Args[1:], os.Stdout, os.Stderr))
}

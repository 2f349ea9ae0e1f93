// Package formats implements `optd schema NAME` and `optd example NAME`: the
// JSON Schema of an input format and a runnable starter input of it, both
// embedded in the binary (packages docs and examples), so that a user
// without the repository can write an input. The formats are described in
// docs/formats.md.
package formats

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/docs"
	"github.com/optd/optd/examples"
)

// verbFor says which verb reads each input format: the help texts list it.
var verbFor = map[string]string{
	"workload":           "optd thresholds --workload (and the workload of a placement scenario)",
	"ita-instance":       "optd ita --instance",
	"placement-scenario": "optd bound --scenario, optd search --scenario",
	"cluster-scenario":   "optd simulate --scenario, optd search --scenario, optd replay --scenario",
}

func formatList(names []string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-20s %s\n", n, verbFor[n])
	}
	return b.String()
}

// newPrinter is the shape both verbs share: one argument naming a format,
// the embedded bytes printed as they are.
func newPrinter(use, short, long string, names []string, get func(string) ([]byte, error)) *cobra.Command {
	return &cobra.Command{
		Use:       use + " NAME",
		Short:     short,
		Long:      long + "\n\nNAME is one of:\n" + formatList(names),
		Args:      cli.ExactArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(names, args[0]) {
				return fmt.Errorf("%s: unknown format %q (known: %s)", use, args[0], strings.Join(names, ", "))
			}
			data, err := get(args[0])
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
}

// NewSchemaCommand returns `optd schema`.
func NewSchemaCommand(_ *cli.Env) *cobra.Command {
	return newPrinter("schema", "Print the JSON Schema of an input format",
		`Prints the JSON Schema (draft 2020-12) of an input format on stdout. Every
example and test input of optd is checked against these schemas and its
decoder, so they describe exactly what optd accepts (except for checks a
schema cannot express: probabilities summing to 1, enough slots for
max_jobs_in_service·max R, the size limits; optd's own errors name those).`,
		docs.SchemaNames(), docs.Schema)
}

// NewExampleCommand returns `optd example`.
func NewExampleCommand(_ *cli.Env) *cobra.Command {
	return newPrinter("example", "Print a runnable starter input of a format",
		`Prints a small, valid input of the format on stdout, to edit: for example
  optd example ita-instance > mine.json && optd ita --instance mine.json`,
		examples.Names(), examples.Get)
}

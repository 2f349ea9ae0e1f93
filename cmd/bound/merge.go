package bound

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/optd/optd/bound"
	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/internal/inputkind"
	"github.com/optd/optd/internal/strictjson"
)

func newMergeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "merge SHARD.json...",
		Short: "Combine the outputs of `optd bound --shard i/n` into the unsharded result",
		Long: `Reads the JSON outputs of every shard of one sharded run (any order), checks
that they come from the same scenario and settings and together cover every
replication exactly once, and prints the result of the unsharded run.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			shards := make([]*bound.Shard, 0, len(args))
			for _, path := range args {
				sh, err := readShard(path)
				if err != nil {
					return err
				}
				shards = append(shards, sh)
			}
			out, err := bound.Merge(shards)
			if err != nil {
				return err
			}
			return cli.WriteJSON(cmd.OutOrStdout(), out)
		},
	}
}

func readShard(path string) (*bound.Shard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var out bound.Output
	if err := strictjson.Decode(data, &out); err != nil {
		if what := inputkind.Describe(data); what != "" {
			return nil, fmt.Errorf("merge: %s: this is %s, not a shard of optd bound --shard", path, what)
		}
		return nil, fmt.Errorf("merge: %s: not an `optd bound` output: %w", path, err)
	}
	if out.Shard == nil {
		return nil, fmt.Errorf("merge: %s: has no \"shard\" (was it run with --shard i/n?)", path)
	}
	return out.Shard, nil
}

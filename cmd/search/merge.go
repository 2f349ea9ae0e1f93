package search

import (
	"fmt"
	"os"
	"reflect"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/internal/inputkind"
	"github.com/optd/optd/internal/strictjson"
)

func newMergeCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "merge SHARD.json...",
		Short: "Combine the restarts of `optd search --shard i/n` into one result",
		Long: `Reads the JSON outputs of every shard of one sharded search (any order),
checks that they come from the same scenario and settings and that every
restart appears exactly once, and prints the output of the restart with the
smallest search objective (all restarts used the same replications, so
their objectives are comparable), with every restart listed.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			outs := make([]*Output, 0, len(args))
			for _, path := range args {
				o, err := readShard(path)
				if err != nil {
					return err
				}
				outs = append(outs, o)
			}
			out, err := Merge(outs)
			if err != nil {
				return err
			}
			return cli.WriteJSON(cmd.OutOrStdout(), out)
		},
	}
}

func readShard(path string) (*Output, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	o, err := decodeShard(data)
	if err != nil {
		return nil, fmt.Errorf("merge: %s: %w", path, err)
	}
	return o, nil
}

// decodeShard decodes one shard's output strictly.
func decodeShard(data []byte) (*Output, error) {
	var out Output
	if err := strictjson.Decode(data, &out); err != nil {
		if what := inputkind.Describe(data); what != "" {
			return nil, fmt.Errorf("this is %s, not a shard of optd search --shard", what)
		}
		return nil, fmt.Errorf("not an `optd search` output: %w", err)
	}
	if out.Shard == nil {
		return nil, fmt.Errorf("has no \"shard\" (was it run with --shard i/n?)")
	}
	if out.Result == nil || len(out.Restarts) != 1 {
		return nil, fmt.Errorf("a shard output has a result and exactly one restart")
	}
	return &out, nil
}

// Merge keeps the shard whose search objective is smallest (ties: the
// lowest index) and lists the restarts of all shards in shard order.
func Merge(outs []*Output) (*Output, error) {
	if len(outs) == 0 {
		return nil, fmt.Errorf("merge: no shards")
	}
	n := outs[0].Shard.Count
	if len(outs) != n {
		return nil, fmt.Errorf("merge: got %d shards of a search split in %d", len(outs), n)
	}
	byIndex := make([]*Output, n)
	for _, o := range outs {
		sh := o.Shard
		if sh.Count != n || sh.Index < 0 || sh.Index >= n {
			return nil, fmt.Errorf("merge: shard %d/%d does not belong to a search split in %d", sh.Index, sh.Count, n)
		}
		if byIndex[sh.Index] != nil {
			return nil, fmt.Errorf("merge: shard %d/%d given twice", sh.Index, n)
		}
		if !reflect.DeepEqual(sh.Settings, outs[0].Shard.Settings) {
			return nil, fmt.Errorf("merge: shard %d/%d has settings %+v, shard %d/%d has %+v", sh.Index, n, sh.Settings, outs[0].Shard.Index, n, outs[0].Shard.Settings)
		}
		byIndex[sh.Index] = o
	}
	best := byIndex[0]
	var restarts []Restart
	for _, o := range byIndex {
		restarts = append(restarts, o.Restarts...)
		if o.Result.Search.Best.Mean < best.Result.Search.Best.Mean {
			best = o
		}
	}
	merged := *best
	merged.Shard = nil
	merged.Restarts = restarts
	return &merged, nil
}

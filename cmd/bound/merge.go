package bound

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
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
			shards := make([]*Shard, 0, len(args))
			for _, path := range args {
				sh, err := readShard(path)
				if err != nil {
					return err
				}
				shards = append(shards, sh)
			}
			out, err := Merge(shards)
			if err != nil {
				return err
			}
			return cli.WriteJSON(cmd.OutOrStdout(), out)
		},
	}
}

func readShard(path string) (*Shard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	var out Output
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("merge: %s: not an `optd bound` output: %w", path, err)
	}
	if out.Shard == nil {
		return nil, fmt.Errorf("merge: %s: has no \"shard\" (was it run with --shard i/n?)", path)
	}
	return out.Shard, nil
}

// Merge combines the shards of one run into the unsharded output.
func Merge(shards []*Shard) (*Output, error) {
	if len(shards) == 0 {
		return nil, fmt.Errorf("merge: no shards")
	}
	first := shards[0]
	n := first.Count
	if len(shards) != n {
		return nil, fmt.Errorf("merge: got %d shards of a run split in %d", len(shards), n)
	}
	seen := make([]bool, n)
	var reps []RepFigures
	for _, sh := range shards {
		if sh.Count != n || sh.Index < 0 || sh.Index >= n {
			return nil, fmt.Errorf("merge: shard %d/%d does not belong to a run split in %d", sh.Index, sh.Count, n)
		}
		if seen[sh.Index] {
			return nil, fmt.Errorf("merge: shard %d/%d given twice", sh.Index, n)
		}
		seen[sh.Index] = true
		if !reflect.DeepEqual(sh.Settings, first.Settings) {
			return nil, fmt.Errorf("merge: shard %d/%d has settings %+v, shard %d/%d has %+v", sh.Index, n, sh.Settings, first.Index, n, first.Settings)
		}
		if !reflect.DeepEqual(sh.Fixed, first.Fixed) {
			return nil, fmt.Errorf("merge: shard %d/%d and shard %d/%d disagree on the MDP or exact bounds", sh.Index, n, first.Index, n)
		}
		lo, hi := shardRange(first.Settings.Replications, sh.Index, n)
		if len(sh.Reps) != hi-lo {
			return nil, fmt.Errorf("merge: shard %d/%d has %d replications, want %d", sh.Index, n, len(sh.Reps), hi-lo)
		}
		for k, r := range sh.Reps {
			if r.Replication != lo+k {
				return nil, fmt.Errorf("merge: shard %d/%d lists replication %d at position %d, want %d", sh.Index, n, r.Replication, k, lo+k)
			}
		}
		reps = append(reps, sh.Reps...)
	}
	slices.SortFunc(reps, func(a, b RepFigures) int { return a.Replication - b.Replication })
	return aggregate(first.Settings.Policies, first.Fixed, reps)
}

// Package version implements `optd version`: the build's version, Go
// toolchain, VCS commit and the COIN-OR Clp library it is linked with, as JSON
// on stdout.
package version

import (
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/solver/lp"
)

// Version overrides the module version from the build info when set at link
// time: go build -ldflags "-X github.com/optd/optd/cmd/version.Version=v1.2.3".
var Version = ""

// Info is the JSON `optd version` prints. VCS fields are present when the
// binary was built from a checkout with VCS stamping (not with
// -buildvcs=false or `go run`).
type Info struct {
	Version    string `json:"version"`
	Go         string `json:"go"`
	Clp        string `json:"clp"` // the Clp library linked through solver/lp
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"` // built from a tree with uncommitted changes
}

// Get returns the running binary's Info.
func Get() Info {
	bi, _ := debug.ReadBuildInfo() // nil when absent
	info := fromBuildInfo(bi, Version)
	info.Clp = lp.Version()
	return info
}

// fromBuildInfo extracts Info from bi (nil when the binary carries none);
// override, if not empty, replaces the module version.
func fromBuildInfo(bi *debug.BuildInfo, override string) Info {
	info := Info{Version: "unknown", Go: runtime.Version()}
	if bi != nil {
		if bi.GoVersion != "" {
			info.Go = bi.GoVersion
		}
		if bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.time":
				info.CommitTime = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if override != "" {
		info.Version = override
	}
	return info
}

// NewCommand returns the `optd version` command.
func NewCommand(_ *cli.Env) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, Go toolchain and commit as JSON",
		Args:  cli.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cli.WriteJSON(cmd.OutOrStdout(), Get())
		},
	}
}

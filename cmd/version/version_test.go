package version

import (
	"regexp"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/optd/optd", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{
			{Key: "-buildmode", Value: "exe"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	tests := []struct {
		name     string
		bi       *debug.BuildInfo
		override string
		want     Info
	}{
		{"no build info", nil, "", Info{Version: "unknown", Go: runtime.Version()}},
		{"stamped", stamped, "", Info{Version: "v0.3.0", Go: "go1.26.8",
			Commit: "0123456789abcdef0123456789abcdef01234567", CommitTime: "2026-01-02T03:04:05Z", Modified: true}},
		{"override", stamped, "v9.9.9", Info{Version: "v9.9.9", Go: "go1.26.8",
			Commit: "0123456789abcdef0123456789abcdef01234567", CommitTime: "2026-01-02T03:04:05Z", Modified: true}},
		{"unstamped", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "",
			Info{Version: "(devel)", Go: "go1.26.8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fromBuildInfo(tt.bi, tt.override); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestGetReportsClp checks that the Clp version comes from the linked library
// and looks like MAJOR.MINOR.PATCH.
func TestGetReportsClp(t *testing.T) {
	got := Get().Clp
	if !regexp.MustCompile(`^\d+\.\d+(\.\d+)?`).MatchString(got) {
		t.Fatalf("Get().Clp = %q, want a version like 1.17.6", got)
	}
}

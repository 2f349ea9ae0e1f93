package serve

import (
	"testing"
	"time"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/cmd/config"
	"github.com/optd/optd/server"
)

func TestOptionsFromConfig(t *testing.T) {
	env := &cli.Env{Config: config.Config{
		Listen: "127.0.0.1:0", DataDir: t.TempDir(),
		Log: config.Log{Level: "debug", Format: "json"}, ShutdownTimeout: 3 * time.Second,
	}}
	env.Logger = cli.NewLogger(t.Output(), env.Config.Log)
	o := Options(env)
	if o.Listen != env.Config.Listen || o.DataDir != env.Config.DataDir ||
		o.ShutdownTimeout != env.Config.ShutdownTimeout || o.Logger != env.Logger {
		t.Errorf("Options = %+v, want the config's values", o)
	}
	if _, err := server.New(o); err != nil {
		t.Fatalf("server.New(Options(env)) = %v", err)
	}
	// The self-checks pass on a writable data dir.
	for _, c := range o.SelfChecks {
		if err := c.Check(t.Context()); err != nil {
			t.Errorf("self-check %q on %s: %v", c.Name, o.DataDir, err)
		}
	}
	if len(o.SelfChecks) == 0 {
		t.Error("no self-checks")
	}
}

// The configuration's default limits (what --help shows and a config file
// overrides) are the server's defaults, field for field: a limit added to
// one and not mapped by Options shows here as a difference.
func TestDefaultConfigLimitsAreTheServerDefaults(t *testing.T) {
	env := &cli.Env{Config: config.Default()}
	if got, want := Options(env).Limits, server.DefaultLimits(); got != want {
		t.Errorf("Options(config.Default()).Limits = %+v\nwant server.DefaultLimits() = %+v", got, want)
	}
}

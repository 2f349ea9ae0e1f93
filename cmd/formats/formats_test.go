package formats

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/optd/optd/cmd/cli"
	"github.com/optd/optd/docs"
	"github.com/optd/optd/examples"
)

func run(args ...string) (string, string, int) {
	return cli.RunCaptured(context.Background(), args, NewSchemaCommand, NewExampleCommand)
}

// Every format's schema and example are printed as embedded, valid JSON.
func TestPrintsEveryFormat(t *testing.T) {
	for _, verb := range []struct {
		name  string
		names []string
		get   func(string) ([]byte, error)
	}{{"schema", docs.SchemaNames(), docs.Schema}, {"example", examples.Names(), examples.Get}} {
		if len(verb.names) < 4 {
			t.Fatalf("%s: only %v", verb.name, verb.names)
		}
		for _, n := range verb.names {
			out, errOut, code := run(verb.name, n)
			want, _ := verb.get(n)
			if code != 0 || errOut != "" || out != string(want) || !json.Valid([]byte(out)) {
				t.Errorf("optd %s %s: code %d, stderr %q, stdout valid JSON %v and equal %v", verb.name, n, code, errOut, json.Valid([]byte(out)), out == string(want))
			}
		}
	}
}

// A wrong or missing name says what the names are.
func TestUnknownName(t *testing.T) {
	_, errOut, code := run("schema", "instance")
	if code != 1 || !strings.Contains(errOut, `unknown format "instance" (known: cluster-scenario, ita-instance, placement-scenario, workload)`) {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
	_, errOut, code = run("example")
	if code != 1 || !strings.Contains(errOut, "optd example --help") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

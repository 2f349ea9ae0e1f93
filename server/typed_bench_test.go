package server

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	optdv1 "github.com/optd/optd/proto/optd/v1"
	"github.com/optd/optd/sim"
)

// BenchmarkTypedInput: what a typed input costs over its JSON text, on the
// example cluster scenario: json decodes the text (the deprecated field's
// path), typed writes the message as JSON first (formatJSON), as the
// server does, then decodes it the same way. Compare the two in one run.
func BenchmarkTypedInput(b *testing.B) {
	data, err := os.ReadFile("../examples/cluster-scenario.json")
	if err != nil {
		b.Fatal(err)
	}
	m := &optdv1.ClusterScenario{}
	if err := protojson.Unmarshal(data, m); err != nil {
		b.Fatal(err)
	}
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			if _, err := sim.DecodeClusterScenario(strings.NewReader(string(data)), ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("typed", func(b *testing.B) {
		for b.Loop() {
			text, err := formatJSON(m)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sim.DecodeClusterScenario(strings.NewReader(string(text)), ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}

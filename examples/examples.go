// Package examples holds a runnable starter input for every input format of
// optd (examples/NAME.json, NAME as in docs/formats.md and `optd schema`),
// embedded so that `optd example NAME` prints one without the repository.
// The README's commands use these files verbatim, and docs/formats_test.go
// checks each against its JSON Schema and its decoder.
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed *.json
var files embed.FS

// Names lists the examples, sorted: the file names without ".json".
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	slices.Sort(names)
	return names
}

// Get returns the example called name.
func Get(name string) ([]byte, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("no example %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return files.ReadFile(name + ".json")
}

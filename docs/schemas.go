// Package docs holds the project's documentation (architecture.md,
// formats.md) and the JSON Schemas of optd's input formats
// (schemas/NAME.schema.json), embedded so that `optd schema NAME` prints one
// without the repository. Its tests keep the pages equal to the code: the
// package map to the imports, every example and test input valid under its
// schema and accepted by its decoder, no reference outside the repository.
package docs

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed schemas/*.schema.json
var schemas embed.FS

const schemaSuffix = ".schema.json"

// SchemaNames lists the formats that have a schema, sorted.
func SchemaNames() []string {
	entries, _ := fs.ReadDir(schemas, "schemas")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), schemaSuffix))
	}
	slices.Sort(names)
	return names
}

// Schema returns the JSON Schema (draft 2020-12) of the format called name.
func Schema(name string) ([]byte, error) {
	if !slices.Contains(SchemaNames(), name) {
		return nil, fmt.Errorf("no format %q (known: %s)", name, strings.Join(SchemaNames(), ", "))
	}
	return schemas.ReadFile("schemas/" + name + schemaSuffix)
}

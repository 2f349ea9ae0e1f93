package docs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/optd/optd/examples"
	"github.com/optd/optd/internal/testenv"
	"github.com/optd/optd/models"
	"github.com/optd/optd/sim"
	"github.com/optd/optd/solver"
)

// inputKinds: for each input format, its decoder and the files of the
// repository that are inputs of that kind (globs relative to the root). The
// example of each format is examples/NAME.json.
var inputKinds = map[string]struct {
	decode func(data []byte, baseDir string) error
	files  []string
}{
	"workload": {
		decode: func(data []byte, dir string) error { _, err := models.DecodeWorkload(data, dir); return err },
		files:  []string{"cmd/thresholds/testdata/*.json", "models/testdata/workload/*.json"},
	},
	"ita-instance": {
		decode: func(data []byte, _ string) error { _, err := solver.DecodeInstance(bytes.NewReader(data)); return err },
		files:  []string{"cmd/ita/testdata/*.json"},
	},
	"placement-scenario": {
		decode: func(data []byte, dir string) error { _, err := sim.DecodeScenario(data, dir); return err },
		files: []string{"cmd/bound/testdata/*.json", "cmd/search/testdata/*.json", "search/testdata/*.json",
			"sim/testdata/scenarios/*.json"},
	},
	"cluster-scenario": {
		decode: func(data []byte, dir string) error {
			_, err := sim.DecodeClusterScenario(bytes.NewReader(data), dir)
			return err
		},
		files: []string{"cmd/simulate/testdata/*.json", "sim/testdata/*.json"},
	},
}

// isRejectInput reports a test input meant to be refused (bad.json,
// bad_alpha.json, unknown_field.json) or an expected output (*.golden.json).
func isRejectInput(name string) bool {
	return strings.HasPrefix(name, "bad") || strings.HasPrefix(name, "unknown") || strings.Contains(name, "golden")
}

func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	ids := map[string]string{}
	for _, name := range SchemaNames() {
		data, err := Schema(name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		id, _ := doc.(map[string]any)["$id"].(string)
		if want := "https://github.com/optd/optd/docs/schemas/" + name + schemaSuffix; id != want {
			t.Fatalf("schema %s: $id %q, want %q", name, id, want)
		}
		if err := c.AddResource(id, doc); err != nil {
			t.Fatal(err)
		}
		ids[name] = id
	}
	out := map[string]*jsonschema.Schema{}
	for name, id := range ids {
		s, err := c.Compile(id)
		if err != nil {
			t.Fatalf("schema %s: %v", name, err)
		}
		out[name] = s
	}
	return out
}

// TestEveryInputMatchesItsSchemaAndDecoder: each example and each valid test
// input of a format is valid under the format's schema and accepted by its
// decoder, so that the schema, the docs and the code cannot drift apart
// unnoticed; every format has a schema, an example and a decoder here.
func TestEveryInputMatchesItsSchemaAndDecoder(t *testing.T) {
	root := testenv.ModuleRoot(t)
	schemas := compileSchemas(t)
	if got, want := slices.Sorted(func(yield func(string) bool) {
		for k := range inputKinds {
			if !yield(k) {
				return
			}
		}
	}), SchemaNames(); !slices.Equal(got, want) {
		t.Fatalf("formats with a decoder %v, with a schema %v", got, want)
	}
	if !slices.Equal(examples.Names(), SchemaNames()) {
		t.Fatalf("examples %v, schemas %v: one example per format", examples.Names(), SchemaNames())
	}
	for name, kind := range inputKinds {
		paths := []string{filepath.Join(root, "examples", name+".json")}
		for _, g := range kind.files {
			m, err := filepath.Glob(filepath.Join(root, g))
			if err != nil || len(m) == 0 {
				t.Fatalf("%s: glob %s matches nothing", name, g)
			}
			paths = append(paths, m...)
		}
		for _, path := range paths {
			if isRejectInput(filepath.Base(path)) {
				continue
			}
			rel, _ := filepath.Rel(root, path)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			if err != nil {
				t.Errorf("%s: not JSON: %v", rel, err)
				continue
			}
			if err := schemas[name].Validate(doc); err != nil {
				t.Errorf("%s is not a valid %s under docs/schemas/%s%s: %v", rel, name, name, schemaSuffix, err)
			}
			if err := kind.decode(data, filepath.Dir(path)); err != nil {
				t.Errorf("%s: the %s decoder refuses it: %v", rel, name, err)
			}
		}
	}
}

// TestSchemasRejectWhatDecodersReject: inputs every decoder refuses for a
// reason a schema can state (an unknown field, a wrong type, a missing
// required field, a negative count, an unknown kind) are refused by the
// schema too, so the schemas are not vacuous.
func TestSchemasRejectWhatDecodersReject(t *testing.T) {
	root := testenv.ModuleRoot(t)
	schemas := compileSchemas(t)
	for name, kind := range inputKinds {
		base, err := examples.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := json.Unmarshal(base, &obj); err != nil {
			t.Fatal(err)
		}
		mutations := map[string]func(map[string]any){
			"unknown field": func(o map[string]any) { o["colour"] = "blue" },
		}
		for field := range obj {
			mutations["without "+field] = func(o map[string]any) { delete(o, field) }
			mutations[field+" a string"] = func(o map[string]any) { o[field] = "x" }
		}
		for what, mutate := range mutations {
			o := map[string]any{}
			for k, v := range obj {
				o[k] = v
			}
			mutate(o)
			data, _ := json.Marshal(o)
			doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(data))
			schemaErr := schemas[name].Validate(doc)
			decodeErr := kind.decode(data, filepath.Join(root, "examples"))
			// An optional field's removal is fine for both; otherwise
			// they must agree that the input is wrong.
			if (schemaErr == nil) != (decodeErr == nil) {
				t.Errorf("%s %s: schema says %v, decoder says %v", name, what, schemaErr, decodeErr)
			}
		}
	}
}

// formatsRef is a pointer into docs/formats.md from anywhere in the
// repository.
var formatsRef = regexp.MustCompile(`docs/formats\.md#([a-z0-9-]+)`)

// TestFormatAnchorsExist: every docs/formats.md#ANCHOR written in the code,
// comments, help texts and docs names a heading of docs/formats.md, and
// every format with a schema has its section.
func TestFormatAnchorsExist(t *testing.T) {
	root := testenv.ModuleRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "formats.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(page), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			anchors[githubAnchor(strings.TrimLeft(h, "# "))] = true
		}
	}
	for _, name := range SchemaNames() {
		if !anchors[name] {
			t.Errorf("docs/formats.md has no section %q for the format with a schema", name)
		}
	}
	refs := 0
	repoFiles(t, root, func(rel string, data []byte) {
		for _, m := range formatsRef.FindAllSubmatchIndex(data, -1) {
			refs++
			if a := string(data[m[2]:m[3]]); !anchors[a] {
				t.Errorf("%s:%d: docs/formats.md has no heading #%s", rel, lineOf(data, m[0]), a)
			}
		}
	})
	if refs < 20 {
		t.Fatalf("found only %d pointers into docs/formats.md", refs)
	}
}

// githubAnchor is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func githubAnchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || ('a' <= r && r <= 'z') || ('0' <= r && r <= '9'):
			b.WriteRune(r)
		}
	}
	return b.String()
}

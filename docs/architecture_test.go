package docs

import (
	"go/build"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/optd/optd/internal/testenv"
)

const module = "github.com/optd/optd/"

// TestPackageMapMatchesImports: every row of architecture.md's package
// table lists exactly the module packages its package's non-test files
// import, and every library package of the module has a row (commands,
// benchmarks, the generated API and test helpers of the environment
// aside).
func TestPackageMapMatchesImports(t *testing.T) {
	root := testenv.ModuleRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	_, table, _ := strings.Cut(string(page), "| package | imports | holds |\n|---|---|---|\n")
	table, _, _ = strings.Cut(table, "\n\n")
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 4 {
			t.Fatalf("package table row %q", line)
		}
		pkg := strings.Trim(strings.TrimSpace(cells[1]), "`")
		var imports []string
		for _, f := range strings.Fields(cells[2]) {
			if f != "—" {
				imports = append(imports, strings.Trim(f, "`"))
			}
		}
		rows[pkg] = imports
	}
	if len(rows) < 20 {
		t.Fatalf("found %d rows in the package table", len(rows))
	}
	var listed []string
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || slices.Contains([]string{"cmd", "benchmarks", "proto", "data", "docs", "examples", "scripts", "internal/testenv"}, rel):
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go package here
		}
		var imports []string
		for _, imp := range p.Imports {
			if rest, ok := strings.CutPrefix(imp, module); ok {
				imports = append(imports, rest)
			}
		}
		listed = append(listed, rel)
		documented, ok := rows[rel]
		switch {
		case !ok:
			t.Errorf("package %s (imports %v) has no row in docs/architecture.md", rel, imports)
		case !slices.Equal(slices.Sorted(slices.Values(documented)), slices.Sorted(slices.Values(imports))):
			t.Errorf("package %s imports %v; docs/architecture.md says %v", rel, imports, documented)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range rows {
		if !slices.Contains(listed, pkg) {
			t.Errorf("docs/architecture.md has a row for %s, which is not a package", pkg)
		}
	}
}

// TestContractsLinkNoSolver: the ledger, the store and the policy contracts
// (and every policy subpackage but assign, whose HaSTE runs the exact ITA)
// reach no solver, so they build without cgo, as the page says.
func TestContractsLinkNoSolver(t *testing.T) {
	root := testenv.ModuleRoot(t)
	deps := func(pkg string) map[string]bool {
		seen := map[string]bool{}
		var visit func(string)
		visit = func(p string) {
			if seen[p] {
				return
			}
			seen[p] = true
			bp, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(p)), 0)
			if err != nil {
				t.Fatalf("%s: %v", p, err)
			}
			for _, imp := range bp.Imports {
				if rest, ok := strings.CutPrefix(imp, module); ok {
					visit(rest)
				}
			}
		}
		visit(pkg)
		return seen
	}
	for _, pkg := range []string{"ledger", "store", "policy", "policy/placement", "policy/slots", "policy/filter", "policy/speculation", "policy/sharing"} {
		if d := deps(pkg); d["solver/lp"] || d["solver"] {
			t.Errorf("%s depends on the solver (cgo): %v", pkg, slices.Sorted(maps.Keys(d)))
		}
	}
	if !deps("policy/assign")["solver/lp"] {
		t.Error("policy/assign no longer reaches solver/lp: update the page and this test")
	}
}

package docs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/optd/optd/internal/testenv"
)

// outsideRefs are the ways a file has pointed outside the repository: the
// team's design notes and contracts, which a user of the repository does not
// have. Each is spelled in two halves so that this file does not match itself.
var outsideRefs = regexp.MustCompile(strings.Join([]string{
	`\.\./` + `shared`,
	`/work/` + `shared`,
	`CONTRACTS` + `\.md`,
	`CONTRACTS` + ` *§`,
	`DESIGN` + `\.md`,
	`\(DESIGN` + `,`,
}, "|"))

// parentPath is a relative path that climbs up; it must stay inside the
// repository when resolved from the file's directory (which is where Go tests
// and Markdown links resolve it).
var parentPath = regexp.MustCompile(`(?:\.\./)+[A-Za-z0-9_][A-Za-z0-9_./-]*`)

// mdLink is a relative Markdown link target (no scheme, no pure anchor).
var mdLink = regexp.MustCompile(`\]\(([^)#:\s]+)(?:#[^)]*)?\)`)

// repoFiles walks the source tree (not .git, nor what .gitignore leaves
// out: build outputs, server state left by a local run, the packages
// scripts/setup.sh installs for the benchmarks) and calls fn with each
// file's path relative to root and its contents.
func repoFiles(t *testing.T, root string, fn func(rel string, data []byte)) {
	t.Helper()
	ignored := gitignored(t, root)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || ignored(rel+"/", d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || ignored(rel, d.Name()) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 { // binary: images, compiled files
			return nil
		}
		fn(rel, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// gitignored reads root's .gitignore, which holds two kinds of pattern: a
// path from the root ("/bin/", a directory when it ends in "/") and a
// file-name glob ("*.test"). Anything else fails the test, so that a new kind
// of pattern is not silently walked.
func gitignored(t *testing.T, root string) func(rel, name string) bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".gitignore"))
	if err != nil {
		t.Fatal(err)
	}
	var paths, globs []string
	for _, line := range strings.Split(string(data), "\n") {
		switch line = strings.TrimSpace(line); {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "!"):
			t.Fatalf(".gitignore: %q: the docs tests do not read negations", line)
		case strings.HasPrefix(line, "/"):
			paths = append(paths, strings.TrimPrefix(line, "/"))
		case !strings.Contains(line, "/"):
			if _, err := filepath.Match(line, ""); err != nil {
				t.Fatalf(".gitignore: %q: %v", line, err)
			}
			globs = append(globs, line)
		default:
			t.Fatalf(".gitignore: %q: the docs tests read only root-anchored paths and file-name globs", line)
		}
	}
	return func(rel, name string) bool {
		for _, p := range paths {
			if rel == p || !strings.HasSuffix(p, "/") && rel == p+"/" { // "/x" is a file or a directory
				return true
			}
		}
		for _, g := range globs {
			if ok, _ := filepath.Match(g, name); ok {
				return true
			}
		}
		return false
	}
}

func lineOf(data []byte, off int) int { return bytes.Count(data[:off], []byte("\n")) + 1 }

// TestNoReferenceOutsideTheRepository: no file (code, comments, --help
// texts, error messages, tests, docs, scripts) cites the team's notes
// outside the repository, and no relative path climbs out of it. The
// formats those notes described are in docs/formats.md.
func TestNoReferenceOutsideTheRepository(t *testing.T) {
	root := testenv.ModuleRoot(t)
	files := 0
	repoFiles(t, root, func(rel string, data []byte) {
		files++
		for _, m := range outsideRefs.FindAllIndex(data, -1) {
			t.Errorf("%s:%d: %q points outside the repository (point into docs/ instead)", rel, lineOf(data, m[0]), data[m[0]:m[1]])
		}
		dir := filepath.Dir(filepath.Join(root, rel))
		for _, m := range parentPath.FindAllIndex(data, -1) {
			target := filepath.Clean(filepath.Join(dir, string(data[m[0]:m[1]])))
			if r, err := filepath.Rel(root, target); err != nil || strings.HasPrefix(r, "..") {
				t.Errorf("%s:%d: %q leaves the repository", rel, lineOf(data, m[0]), data[m[0]:m[1]])
			}
		}
	})
	if files < 100 {
		t.Fatalf("walked only %d files under %s: is this the repository root?", files, root)
	}
}

// TestMarkdownLinksExist: every relative link of every Markdown file names a
// file or directory of the repository.
func TestMarkdownLinksExist(t *testing.T) {
	root := testenv.ModuleRoot(t)
	links := 0
	repoFiles(t, root, func(rel string, data []byte) {
		if !strings.HasSuffix(rel, ".md") {
			return
		}
		dir := filepath.Dir(filepath.Join(root, rel))
		for _, m := range mdLink.FindAllSubmatchIndex(data, -1) {
			links++
			target := string(data[m[2]:m[3]])
			if _, err := os.Stat(filepath.Join(dir, target)); err != nil {
				t.Errorf("%s:%d: link to %s: no such file", rel, lineOf(data, m[0]), target)
			}
		}
	})
	if links == 0 {
		t.Fatal("no relative Markdown link found: the pattern is broken")
	}
}

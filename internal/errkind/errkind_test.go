package errkind_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/optd/optd/internal/errkind"
	"github.com/optd/optd/internal/testenv"
)

func TestOfFindsTheKindThroughWrapping(t *testing.T) {
	errA := errkind.New(errkind.Invalid, "a: bad")
	errB := errkind.New(errkind.NotFound, "b: missing")
	for _, tc := range []struct {
		err  error
		want errkind.Kind
	}{
		{errA, errkind.Invalid},
		{fmt.Errorf("field x: %w", errA), errkind.Invalid},
		{fmt.Errorf("outer: %w", fmt.Errorf("%w: inner", errB)), errkind.NotFound},
		{errors.Join(errors.New("plain"), errB), errkind.NotFound},
		{fmt.Errorf("%w: %w", errA, errB), errkind.Invalid}, // the first marked error wins
		{errors.New("plain"), 0},
		{nil, 0},
	} {
		if got := errkind.Of(tc.err); got != tc.want {
			t.Errorf("Of(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", errA), errA) || errors.Is(errA, errkind.New(errkind.Invalid, "a: bad")) {
		t.Error("sentinels must match by identity, as errors.New's do")
	}
	if errA.Error() != "a: bad" {
		t.Errorf("message %q", errA.Error())
	}
}

// TestEveryExportedSentinelHasAKind is what keeps a new validation error
// from ever reaching a caller as Internal: every exported package-level
// error variable of the module (ErrX = ...) must be made by errkind.New,
// which forces its author to say what kind of failure it is.
func TestEveryExportedSentinelHasAKind(t *testing.T) {
	root := testenv.ModuleRoot(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "data") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					checked++
					call, ok := vs.Values[i].(*ast.CallExpr)
					sel, ok2 := func() (*ast.SelectorExpr, bool) {
						if !ok {
							return nil, false
						}
						s, ok := call.Fun.(*ast.SelectorExpr)
						return s, ok
					}()
					if !ok2 || fmt.Sprint(sel.X) != "errkind" || sel.Sel.Name != "New" {
						rel, _ := filepath.Rel(root, path)
						t.Errorf("%s: %s is not made by errkind.New: say what kind of failure it is", rel, name.Name)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 30 {
		t.Fatalf("found only %d exported sentinels; is the module root %s right?", checked, root)
	}
}

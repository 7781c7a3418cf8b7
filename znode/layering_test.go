package znode

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports enforces the package's dependency rule: non-test files import
// the standard library, zkraft's jute and internal/mutation (test switches, off by default) only.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range file.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			first := strings.Split(p, "/")[0]
			if p != "github.com/zkraft/zkraft/jute" && p != "github.com/zkraft/zkraft/internal/mutation" && strings.Contains(first, ".") {
				t.Errorf("%s imports %q: znode may import only the standard library, jute and internal/mutation", f, p)
			}
		}
	}
}

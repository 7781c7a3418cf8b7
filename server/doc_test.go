package server

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDocLockOrderListsEveryMutex keeps doc.go's lock order complete: every
// sync.Mutex and sync.RWMutex field of a struct in this package must be
// named there as Type.field. A new mutex needs its place in the order.
func TestDocLockOrderListsEveryMutex(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	require.NoError(t, err)
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	fset := token.NewFileSet()
	var found []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		require.NoError(t, err)
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				return true
			}
			for _, field := range st.Fields.List {
				sel, ok := field.Type.(*ast.SelectorExpr)
				if !ok || (sel.Sel.Name != "Mutex" && sel.Sel.Name != "RWMutex") {
					continue
				}
				if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "sync" {
					continue
				}
				for _, id := range field.Names {
					found = append(found, ts.Name.Name+"."+id.Name)
				}
			}
			return true
		})
	}
	require.NotEmpty(t, found)
	for _, m := range found {
		require.Contains(t, string(doc), m, "doc.go's lock order does not name %s", m)
	}
}

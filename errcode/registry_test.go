package errcode_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/hilodb/hilodb/errcode"
)

// TestEveryCodeIsListed: every Code declared in the package is in All, so
// TestCodesAreUnique sees it; a code left out of All could share a number
// unnoticed.
func TestEveryCodeIsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, c := range errcode.All {
		listed[c.Name] = true
	}
	declared := 0
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.CompositeLit)
		if !ok {
			return true
		}
		if id, ok := lit.Type.(*ast.Ident); !ok || id.Name != "Code" || len(lit.Elts) == 0 {
			return true
		}
		declared++
		name, ok := lit.Elts[0].(*ast.BasicLit)
		if !ok || name.Kind != token.STRING {
			t.Errorf("a Code literal without its name first: %#v", lit.Elts[0])
			return true
		}
		if n := name.Value[1 : len(name.Value)-1]; !listed[n] {
			t.Errorf("code %s is declared but not in All", n)
		}
		return true
	})
	if declared != len(errcode.All) {
		t.Errorf("%d codes declared, %d in All", declared, len(errcode.All))
	}
}

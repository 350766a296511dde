package lmdb

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The drop-in promise, checked mechanically: every exported identifier of
// lmdb-go v1.9.3's lmdb and lmdbscan packages exists here with the same
// kind and the same signature (parameter and result types, receivers,
// exported struct fields). Extra identifiers of ours are allowed.

// apiSurface maps "kind name" to a rendering of its signature.
func apiSurface(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	render := func(n ast.Node) string {
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, n); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	// types of a field list, one entry per name, names dropped
	fieldTypes := func(fl *ast.FieldList) string {
		if fl == nil {
			return ""
		}
		var parts []string
		for _, f := range fl.List {
			n := len(f.Names)
			if n == 0 {
				n = 1
			}
			for i := 0; i < n; i++ {
				parts = append(parts, render(f.Type))
			}
		}
		return strings.Join(parts, ", ")
	}
	for _, path := range files {
		base := filepath.Base(path)
		if strings.HasSuffix(base, "_test.go") || strings.Contains(base, "windows") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				name := d.Name.Name
				if d.Recv != nil {
					recv := strings.TrimPrefix(render(d.Recv.List[0].Type), "*")
					if !ast.IsExported(recv) {
						continue
					}
					name = render(d.Recv.List[0].Type) + "." + name
				}
				out["func "+name] = "(" + fieldTypes(d.Type.Params) + ") (" + fieldTypes(d.Type.Results) + ")"
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						sig := "type"
						if st, ok := s.Type.(*ast.StructType); ok {
							var fields []string
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									if n.IsExported() {
										fields = append(fields, n.Name+" "+render(fld.Type))
									}
								}
							}
							sort.Strings(fields)
							sig = "struct{" + strings.Join(fields, "; ") + "}"
						} else if _, ok := s.Type.(*ast.InterfaceType); ok {
							sig = "interface " + render(s.Type)
						} else {
							sig = "type " + render(s.Type)
						}
						out["type "+s.Name.Name] = sig
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								out[d.Tok.String()+" "+n.Name] = ""
							}
						}
					}
				}
			}
		}
	}
	return out
}

func upstreamDir(t *testing.T, sub string) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/PowerDNS/lmdb-go").Output()
	if err != nil {
		t.Fatalf("locating lmdb-go v1.9.3 in the module cache: %v", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), sub)
}

func compareSurface(t *testing.T, upstream, ours string) {
	up := apiSurface(t, upstream)
	our := apiSurface(t, ours)
	if len(up) < 10 {
		t.Fatalf("read only %d identifiers from %s", len(up), upstream)
	}
	var keys []string
	for k := range up {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		got, ok := our[k]
		if !ok {
			t.Errorf("missing: %s %s", k, up[k])
			continue
		}
		if got != up[k] {
			t.Errorf("changed: %s\n\tlmdb-go: %s\n\tours:    %s", k, up[k], got)
		}
	}
	t.Logf("%d exported identifiers of %s checked, %d in ours", len(up), upstream, len(our))
}

func TestAPISurfaceMatchesLMDBGo(t *testing.T) {
	compareSurface(t, upstreamDir(t, "lmdb"), ".")
}

func TestAPISurfaceMatchesLMDBGoScan(t *testing.T) {
	compareSurface(t, upstreamDir(t, "lmdbscan"), filepath.Join("..", "lmdbscan"))
}

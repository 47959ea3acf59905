// Command testfiles measures how one Go package's tests follow its code:
// each test file and whether it is named for a source file of the package
// (claim_test.go for claim.go), and the store wrappers its tests declare
// (types in _test.go files that embed store.Store or one database's store), so a change to the
// tests can be judged before and after.
//
//	go run ./scripts/testfiles            # the root package
//	go run ./scripts/testfiles ./internal/monitor
//
// A test file is named for a source when its name, less "_test.go", less
// an "example_" prefix, a "_bench" suffix and a build suffix ("_unix",
// "_linux", …), is a source file's name less ".go". Besides those, a
// package may have example_test.go, bench_test.go, harness_test.go and
// main_test.go. It reads files only: no build, no type check.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// extras are the test files a package may have beside those named for a
// source: the examples, the benchmarks, the shared harness, TestMain.
var extras = map[string]bool{
	"example_test.go": true, "bench_test.go": true, "harness_test.go": true, "main_test.go": true,
}

// buildSuffixes are the name endings that say which systems a file builds
// on; the file is still named for the source before them.
var buildSuffixes = []string{"_unix", "_linux", "_darwin", "_windows", "_other"}

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: testfiles [dir]")
		flag.PrintDefaults()
	}
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	if err := run(dir); err != nil {
		fmt.Fprintln(os.Stderr, "testfiles:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	tests, sources, err := goFiles(dir)
	if err != nil {
		return err
	}
	named, extra := 0, 0
	fmt.Printf("test files: %d (sources: %d)\n", len(tests), len(sources))
	for _, name := range tests {
		src, ok := sourceOf(name, sources)
		switch {
		case ok:
			named++
			fmt.Printf("  %-32s %s\n", name, src)
		case extras[trimBuild(name)]:
			named++
			extra++
			fmt.Printf("  %-32s (allowed extra)\n", name)
		default:
			fmt.Printf("  %-32s NAMED FOR NO SOURCE\n", name)
		}
	}
	fmt.Printf("named for a source or an allowed extra: %d of %d (%d extras)\n", named, len(tests), extra)

	wrappers, err := storeWrappers(dir, tests)
	if err != nil {
		return err
	}
	fmt.Printf("store wrappers (types in _test.go embedding store.Store or a database's *X.Store): %d\n", len(wrappers))
	for _, w := range wrappers {
		fmt.Printf("  %s\n", w)
	}
	return nil
}

// goFiles lists dir's test files and the names of its source files (less
// ".go"), each sorted.
func goFiles(dir string) (tests []string, sources map[string]bool, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	sources = map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir() || !strings.HasSuffix(name, ".go"):
		case strings.HasSuffix(name, "_test.go"):
			tests = append(tests, name)
		default:
			sources[strings.TrimSuffix(name, ".go")] = true
		}
	}
	sort.Strings(tests)
	return tests, sources, nil
}

// trimBuild returns a test file's name less its build suffix:
// example_unix_test.go is example_test.go for unix.
func trimBuild(test string) string {
	base := strings.TrimSuffix(test, "_test.go")
	for _, s := range buildSuffixes {
		base = strings.TrimSuffix(base, s)
	}
	return base + "_test.go"
}

// sourceOf returns the source file a test file is named for.
func sourceOf(test string, sources map[string]bool) (string, bool) {
	base := strings.TrimSuffix(trimBuild(test), "_test.go")
	base = strings.TrimSuffix(base, "_bench")
	base = strings.TrimPrefix(base, "example_")
	if sources[base] {
		return base + ".go", true
	}
	return "", false
}

// storeWrappers lists the types declared in the test files whose struct
// embeds store.Store, as "file: Type".
func storeWrappers(dir string, tests []string) ([]string, error) {
	fset := token.NewFileSet()
	var out []string
	for _, name := range tests {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok && embedsStore(st) {
				out = append(out, name+": "+ts.Name.Name)
			}
			return true
		})
	}
	return out, nil
}

// embedsStore reports whether st has an embedded store.Store field, or
// a store of one database (*postgres.Store, *sqlite.Store, …): a wrapper
// too, one that keeps the store's optional interfaces.
func embedsStore(st *ast.StructType) bool {
	for _, f := range st.Fields.List {
		if len(f.Names) > 0 {
			continue
		}
		typ := f.Type
		if star, ok := typ.(*ast.StarExpr); ok {
			typ = star.X
		}
		if sel, ok := typ.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
			if _, ok := sel.X.(*ast.Ident); ok {
				return true
			}
		}
	}
	return false
}

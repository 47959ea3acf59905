// Command structure measures the shape of one Go package, so a change to
// it can be judged before and after as its speed is: methods and fields per
// type, files and lines, functions over a length, which files use each other
// and the largest cycle among them, where each type's mutex is locked, and
// which packages of the module import it.
//
//	go run ./scripts/structure            # the root package
//	go run ./scripts/structure ./store/mysql
//
// A file uses another when it names something (a function, method, type,
// variable, constant or struct field) declared in the other. Tests are left
// out. It type-checks from source, so it needs no build of the package.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	maxFunc := flag.Int("func-lines", 80, "report functions longer than this many lines")
	maxFile := flag.Int("file-lines", 400, "report files longer than this many lines")
	edges := flag.Bool("edges", false, "list the arrows inside each cycle, with the names that make them")
	flag.Parse()
	dir := "."
	if flag.NArg() > 0 {
		dir = flag.Arg(0)
	}
	if err := run(dir, *maxFunc, *maxFile, *edges); err != nil {
		fmt.Fprintln(os.Stderr, "structure:", err)
		os.Exit(1)
	}
}

type pkg struct {
	fset  *token.FileSet
	files []*ast.File
	names []string // file base names, as files
	info  *types.Info
	types *types.Package
	path  string   // import path
	tests []string // test file base names
}

func load(dir string) (*pkg, error) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\n{{.Dir}}\n{{join .TestGoFiles \" \"}} {{join .XTestGoFiles \" \"}}\n{{join .GoFiles \" \"}}", dir).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", dir, err)
	}
	lines := strings.SplitN(strings.TrimSpace(string(out)), "\n", 4)
	if len(lines) < 4 {
		return nil, fmt.Errorf("go list %s: no Go files", dir)
	}
	p := &pkg{fset: token.NewFileSet(), path: lines[0], tests: strings.Fields(lines[2])}
	lines[2] = lines[3]
	for _, name := range strings.Fields(lines[2]) {
		f, err := parser.ParseFile(p.fset, filepath.Join(lines[1], name), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
		p.names = append(p.names, name)
	}
	p.info = &types.Info{
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: importer.ForCompiler(p.fset, "source", nil)}
	p.types, err = conf.Check(p.path, p.fset, p.files, p.info)
	if err != nil {
		return nil, fmt.Errorf("type-checking %s: %w", p.path, err)
	}
	return p, nil
}

func run(dir string, maxFunc, maxFile int, edges bool) error {
	p, err := load(dir)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	fmt.Fprintf(w, "package %s\n\n", p.path)
	p.sizes(w, maxFile)
	p.typeShapes(w)
	p.longFuncs(w, maxFunc)
	p.fileUses(w, edges)
	p.lockSites(w)
	importers(w, p.path)
	return nil
}

func (p *pkg) fileOf(pos token.Pos) string {
	return filepath.Base(p.fset.Position(pos).Filename)
}

// sizes prints the files and lines, and each file over maxFile lines.
func (p *pkg) sizes(w *bufio.Writer, maxFile int) {
	total := 0
	var long []string
	for i, f := range p.files {
		n := p.fset.File(f.Pos()).LineCount()
		total += n
		if n > maxFile {
			long = append(long, fmt.Sprintf("%s (%d)", p.names[i], n))
		}
	}
	fmt.Fprintf(w, "source: %d files, %d lines\n", len(p.files), total)
	fmt.Fprintf(w, "files over %d lines: %d %s\n", maxFile, len(long), strings.Join(long, ", "))
	source := map[string]bool{}
	for _, name := range p.names {
		source[strings.TrimSuffix(name, ".go")] = true
	}
	var unnamed []string
	for _, t := range p.tests {
		base := strings.TrimSuffix(t, "_test.go")
		if !source[base] && !strings.HasPrefix(base, "example") {
			unnamed = append(unnamed, t)
		}
	}
	fmt.Fprintf(w, "test files: %d, %d named after no source file (examples aside)\n\n", len(p.tests), len(unnamed))
}

// typeShapes prints each named type with methods or fields: its method
// count (pointer and value receivers) and, for a struct, its field count.
func (p *pkg) typeShapes(w *bufio.Writer) {
	type shape struct {
		name            string
		methods, fields int
	}
	var shapes []shape
	scope := p.types.Scope()
	for _, name := range scope.Names() {
		tn, ok := scope.Lookup(name).(*types.TypeName)
		if !ok || tn.IsAlias() {
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		s := shape{name: name, methods: named.NumMethods()}
		if st, ok := named.Underlying().(*types.Struct); ok {
			s.fields = st.NumFields()
		}
		if s.methods > 0 || s.fields > 0 {
			shapes = append(shapes, s)
		}
	}
	sort.Slice(shapes, func(i, j int) bool {
		if shapes[i].methods != shapes[j].methods {
			return shapes[i].methods > shapes[j].methods
		}
		return shapes[i].name < shapes[j].name
	})
	fmt.Fprintf(w, "types by methods (methods / fields):\n")
	for i, s := range shapes {
		if i == 15 {
			fmt.Fprintf(w, "  … %d more\n", len(shapes)-i)
			break
		}
		fmt.Fprintf(w, "  %-28s %3d / %d\n", s.name, s.methods, s.fields)
	}
	fmt.Fprintln(w)
}

// longFuncs prints each function or method longer than max lines.
func (p *pkg) longFuncs(w *bufio.Writer, max int) {
	var long []string
	for _, f := range p.files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			n := p.fset.Position(fd.End()).Line - p.fset.Position(fd.Pos()).Line + 1
			if n > max {
				name := fd.Name.Name
				if fd.Recv != nil && len(fd.Recv.List) > 0 {
					name = types.ExprString(fd.Recv.List[0].Type) + "." + name
				}
				long = append(long, fmt.Sprintf("%s %s (%d)", p.fileOf(fd.Pos()), name, n))
			}
		}
	}
	fmt.Fprintf(w, "functions over %d lines: %d\n", max, len(long))
	for _, l := range long {
		fmt.Fprintf(w, "  %s\n", l)
	}
	fmt.Fprintln(w)
}

// fileUses builds the graph of files naming what other files declare and
// prints its largest strongly connected component.
func (p *pkg) fileUses(w *bufio.Writer, edges bool) {
	uses := map[string]map[string]bool{}
	names := map[[2]string]map[string]bool{} // (from, to) → the names used
	for _, name := range p.names {
		uses[name] = map[string]bool{}
	}
	for id, obj := range p.info.Uses {
		if obj == nil || obj.Pkg() != p.types || !obj.Pos().IsValid() {
			continue
		}
		if _, local := obj.(*types.Var); local && obj.Parent() != nil && obj.Parent() != p.types.Scope() {
			continue // a local variable or parameter
		}
		from, to := p.fileOf(id.Pos()), p.fileOf(obj.Pos())
		if from != to && uses[from] != nil && uses[to] != nil {
			uses[from][to] = true
			k := [2]string{from, to}
			if names[k] == nil {
				names[k] = map[string]bool{}
			}
			names[k][obj.Name()] = true
		}
	}
	arrows := 0
	for _, to := range uses {
		arrows += len(to)
	}
	sccs := stronglyConnected(p.names, uses)
	sort.Slice(sccs, func(i, j int) bool { return len(sccs[i]) > len(sccs[j]) })
	fmt.Fprintf(w, "file-use graph: %d files, %d arrows\n", len(p.names), arrows)
	for _, c := range sccs {
		if len(c) < 2 {
			break
		}
		sort.Strings(c)
		fmt.Fprintf(w, "  cycle of %d files: %s\n", len(c), strings.Join(c, " "))
		if edges {
			in := map[string]bool{}
			for _, f := range c {
				in[f] = true
			}
			for _, from := range c {
				var tos []string
				for to := range uses[from] {
					if in[to] {
						tos = append(tos, to)
					}
				}
				sort.Strings(tos)
				for _, to := range tos {
					var ns []string
					for n := range names[[2]string{from, to}] {
						ns = append(ns, n)
					}
					sort.Strings(ns)
					fmt.Fprintf(w, "    %s -> %s: %s\n", from, to, strings.Join(ns, " "))
				}
			}
		}
	}
	if len(sccs) == 0 || len(sccs[0]) < 2 {
		fmt.Fprintf(w, "  no cycles\n")
	}
	fmt.Fprintln(w)
}

// stronglyConnected is Tarjan's algorithm over the files.
func stronglyConnected(nodes []string, edges map[string]map[string]bool) [][]string {
	index := map[string]int{}
	low := map[string]int{}
	on := map[string]bool{}
	var stack []string
	var out [][]string
	next := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		on[v] = true
		targets := make([]string, 0, len(edges[v]))
		for t := range edges[v] {
			targets = append(targets, t)
		}
		sort.Strings(targets)
		for _, t := range targets {
			if _, seen := index[t]; !seen {
				visit(t)
				low[v] = min(low[v], low[t])
			} else if on[t] {
				low[v] = min(low[v], index[t])
			}
		}
		if low[v] == index[v] {
			var c []string
			for {
				top := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[top] = false
				c = append(c, top)
				if top == v {
					break
				}
			}
			out = append(out, c)
		}
	}
	for _, n := range nodes {
		if _, seen := index[n]; !seen {
			visit(n)
		}
	}
	return out
}

// lockSites counts, per struct type, the calls that lock a sync.Mutex or
// sync.RWMutex field of it (x.mu.Lock(), x.mu.RLock()), and the files they
// are in.
func (p *pkg) lockSites(w *bufio.Writer) {
	type sites struct {
		n     int
		files map[string]bool
	}
	byType := map[string]*sites{}
	for _, f := range p.files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "Lock" && sel.Sel.Name != "RLock") {
				return true
			}
			field, ok := sel.X.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			fs := p.info.Selections[field]
			if fs == nil || fs.Kind() != types.FieldVal {
				return true
			}
			if t := fs.Obj().Type().String(); t != "sync.Mutex" && t != "sync.RWMutex" {
				return true
			}
			owner := types.TypeString(fs.Recv(), types.RelativeTo(p.types))
			owner = strings.TrimPrefix(owner, "*")
			s := byType[owner]
			if s == nil {
				s = &sites{files: map[string]bool{}}
				byType[owner] = s
			}
			s.n++
			s.files[p.fileOf(call.Pos())] = true
			return true
		})
	}
	owners := make([]string, 0, len(byType))
	for o := range byType {
		owners = append(owners, o)
	}
	sort.Slice(owners, func(i, j int) bool { return byType[owners[i]].n > byType[owners[j]].n })
	fmt.Fprintf(w, "mutex lock sites (type: sites in files):\n")
	for _, o := range owners {
		fmt.Fprintf(w, "  %-28s %3d in %d\n", o, byType[o].n, len(byType[o].files))
	}
	fmt.Fprintln(w)
}

// importers prints the packages of the module (tests left out) that import
// path, so an arrow from internal/ up into a public package shows.
func importers(w *bufio.Writer, path string) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		fmt.Fprintf(w, "importers: go list: %v\n", err)
		return
	}
	var by []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for _, imp := range fields[1:] {
			if imp == path {
				by = append(by, fields[0])
			}
		}
	}
	fmt.Fprintf(w, "imported by %d packages:\n", len(by))
	for _, b := range by {
		fmt.Fprintf(w, "  %s\n", b)
	}
}

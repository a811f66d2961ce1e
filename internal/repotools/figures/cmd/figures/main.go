// Command figures checks the figures the docs quote against the results
// in docs/results, and with -w rewrites them (make figures). See
// internal/repotools/figures for the markers and the rules.
//
//	go run ./internal/repotools/figures/cmd/figures          # check; exit 1 on a problem
//	go run ./internal/repotools/figures/cmd/figures -w       # rewrite every marked span, then check
//	go run ./internal/repotools/figures/cmd/figures -list    # every key: tolerance, value, source
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/freshcache/freshcache/internal/repotools/docscheck"
	"github.com/freshcache/freshcache/internal/repotools/figures"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	write := flag.Bool("w", false, "rewrite every marked span from the results before checking")
	list := flag.Bool("list", false, "list every figure key with its tolerance, value and source, and exit")
	flag.Parse()
	if err := run(*root, *write, *list); err != nil {
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(1)
	}
}

func run(root string, write, list bool) error {
	files, err := docscheck.TrackedFiles(root)
	if err != nil {
		return err
	}
	fsys := os.DirFS(root)
	if list {
		src := figures.NewSource(fsys, files)
		for _, f := range figures.All() {
			v, err := src.Value(f.Key)
			val, tol := v.Text, v.Tolerance()
			if err != nil {
				val, tol = "ERROR: "+err.Error(), "-"
			}
			if strings.Contains(val, "\n") {
				val = fmt.Sprintf("(%d lines)", strings.Count(val, "\n")+1)
			}
			fmt.Printf("%s\t%s\t%s\t%s\t%s\n", f.Key, tol, val, strings.Join(f.From, ","), f.What)
		}
		return nil
	}
	if write {
		// The index's citations depend on the other docs' spans, not on
		// their text, so one pass over the files is enough.
		src := figures.NewSource(fsys, files)
		for _, f := range files {
			if !strings.HasSuffix(f, ".md") {
				continue
			}
			p := filepath.Join(root, filepath.FromSlash(f))
			data, err := os.ReadFile(p)
			if os.IsNotExist(err) {
				continue
			}
			if err != nil {
				return err
			}
			out, _ := figures.Rewrite(src, f, string(data))
			if out == string(data) {
				continue
			}
			if err := os.WriteFile(p, []byte(out), 0o644); err != nil {
				return err
			}
			fmt.Println("rewrote", f)
		}
	}
	problems, err := figures.Check(fsys, files)
	if err != nil {
		return err
	}
	unused, err := figures.Unused(fsys, files)
	if err != nil {
		return err
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	for _, k := range unused {
		fmt.Printf("internal/repotools/figures: fig:%s is marked nowhere; remove it or quote it\n", k)
	}
	if n := len(problems) + len(unused); n > 0 {
		return fmt.Errorf("%d problem(s)", n)
	}
	return nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/apiserver"
	"github.com/freshcache/freshcache/tools/bench/storage"
)

func runMemory(ctx context.Context, args []string) error {
	fs := pflag.NewFlagSet("memory", pflag.ContinueOnError)
	var (
		cm       common
		pods     []int
		nodes    int
		backends []string
	)
	cm.add(fs, "memory")
	fs.IntSliceVar(&pods, "pods", []int{20000, 100000}, "data set sizes; each gets its own etcd")
	fs.IntVar(&nodes, "nodes", 200, "nodes the pods are spread over")
	fs.StringSliceVar(&backends, "backends", []string{storage.BackendUpstream, storage.BackendFreshcache}, "caches to measure, in order")
	if err := fs.Parse(args); err != nil {
		return err
	}
	report := storage.NewReport("memory")
	report.Notes = cm.notes
	for _, n := range pods {
		dir, cleanup, err := cm.setup()
		if err != nil {
			return err
		}
		t0 := time.Now()
		env, err := storage.StartEnv(ctx, filepath.Join(dir, fmt.Sprint(n)), storage.Shape{Pods: n, Nodes: nodes})
		if err != nil {
			cleanup()
			return err
		}
		fmt.Fprintf(os.Stderr, "# loaded %d pods in %v\n", n, time.Since(t0).Round(time.Millisecond))
		rows, err := storage.MeasureMemory(ctx, env, backends, os.Stderr)
		report.Memory = append(report.Memory, rows...)
		env.Close()
		cleanup()
		if err != nil {
			return err
		}
	}
	fmt.Printf("%-11s %8s %14s %14s\n", "backend", "pods", "heap MiB", "bytes/object")
	for _, m := range report.Memory {
		fmt.Printf("%-11s %8d %14.1f %14.0f\n", m.Backend, m.Pods, float64(m.HeapAfter-min(m.HeapAfter, m.HeapBefore))/(1<<20), m.BytesPerObject)
	}
	if cm.outDir == "" {
		return nil
	}
	if err := os.MkdirAll(cm.outDir, 0o755); err != nil {
		return err
	}
	if err := report.WriteJSON(cm.path(".json")); err != nil {
		return err
	}
	return writeMarkdown(cm.path(".md"), func(w io.Writer) { storage.WriteMarkdown(w, report) })
}

func runPlot(args []string) error {
	fs := pflag.NewFlagSet("plot", pflag.ContinueOnError)
	in := fs.String("in", "docs/results/storage-20k.json", "storage JSON report")
	outDir := fs.String("out-dir", "docs/results", "directory for the figure")
	name := fs.String("name", "storage-20k", "file name of the figure (NAME.png)")
	markdown := fs.Bool("markdown", false, "also write NAME.md from the JSON (after a change to the report's layout; the figures are the JSON's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r, err := storage.ReadReport(*in)
	if err != nil {
		return err
	}
	md := func(w io.Writer) { storage.WriteMarkdown(w, r) }
	if r.Kind == "apiserver" {
		// Package apiserver's report: its rows are not storage rows, and
		// it has no plots.
		a, err := apiserver.ReadReport(*in)
		if err != nil {
			return err
		}
		r, md = storage.Report{}, func(w io.Writer) { apiserver.WriteMarkdown(w, a) }
	}
	if *markdown {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			return err
		}
		if err := writeMarkdown(filepath.Join(*outDir, *name+".md"), md); err != nil {
			return err
		}
	}
	paths, err := storage.Plot(r, *outDir, *name)
	for _, p := range paths {
		fmt.Fprintln(os.Stderr, "# wrote", p)
	}
	return err
}

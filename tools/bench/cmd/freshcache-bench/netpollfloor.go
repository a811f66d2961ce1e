package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/freshcache/freshcache/tools/bench/diag/netpollfloor"
	"github.com/freshcache/freshcache/tools/bench/report"
)

// runNetpollFloor times a loopback TCP round trip and a channel round trip
// while busy goroutines keep the cores saturated, for each busy count: what
// the Go network poller adds to any socket round trip, a revision fetch's
// included, at the consistent-read target load (package netpollfloor).
func runNetpollFloor(ctx context.Context, args []string) (err error) {
	fs := pflag.NewFlagSet("netpoll-floor", pflag.ContinueOnError)
	var (
		out   string
		busy  []int
		flags netpollfloor.Options
	)
	fs.StringVar(&out, "out", "", "write the markdown to this file instead of standard output")
	fs.IntSliceVar(&busy, "busy", []int{0, 2, 8, 16, 32, 64}, "busy goroutine counts, one measurement each")
	fs.DurationVar(&flags.Work, "work", 150*time.Microsecond, "CPU each busy goroutine burns between two waits")
	fs.DurationVar(&flags.GatePeriod, "gate", 500*time.Microsecond, "how often the shared gate the busy goroutines park on opens")
	fs.IntVar(&flags.Samples, "samples", 2000, "round trips of each kind per measurement")
	fs.DurationVar(&flags.Pause, "pause", 200*time.Microsecond, "pause between two pairs of round trips")
	if err := fs.Parse(args); err != nil {
		return err
	}
	w, done, err := createOut(out)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, done()) }()
	results := make([]netpollfloor.Result, 0, len(busy))
	for _, n := range busy {
		o := flags
		o.Busy = n
		r, err := netpollfloor.Measure(ctx, o)
		if err != nil {
			return fmt.Errorf("netpoll-floor: busy=%d: %w", n, err)
		}
		fmt.Fprintf(os.Stderr, "busy=%d: tcp p50 %v, chan p50 %v\n", n, r.TCP.P50, r.Chan.P50)
		results = append(results, r)
	}
	m := report.ThisMachine()
	if _, err := fmt.Fprintf(w, "# freshcache-bench netpoll-floor: %s\n\n- commit: `%s`\n- machine: %s, %d cores (GOMAXPROCS %d), %s, %s\n- command: `%s`\n- how to read this: tools/bench/diag/netpollfloor/doc.go; docs/investigations/consistent-read-cost.md\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), report.GitCommit(), m.CPU, m.Cores, m.GOMAXPROCS, m.GoVersion, m.OS, strings.Join(os.Args, " ")); err != nil {
		return err
	}
	return netpollfloor.WriteMarkdown(w, results)
}

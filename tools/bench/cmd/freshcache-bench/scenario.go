package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
)

// What the scenario subcommands (stall, watchlist, kep-2340) share: their command
// line with its --short, and their report files.

// parseScenario parses a scenario subcommand's command line. bind declares
// its flags on fs, into cfg (with cfg's values as their defaults) and into
// the command's own variables, and --short into short. A flag not given
// takes def's value, or with --short short's (the smoke run's); a flag
// given keeps its own either way. The bool says whether --short was given.
func parseScenario[C any](name string, args []string, def, short C, bind func(fs *pflag.FlagSet, cfg *C, short *bool)) (C, bool, error) {
	cfg, isShort := def, false
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	bind(fs, &cfg, &isShort)
	if err := fs.Parse(args); err != nil {
		return cfg, false, err
	}
	if fs.NArg() > 0 {
		return cfg, false, fmt.Errorf("%s: unexpected arguments %q", name, fs.Args())
	}
	if !isShort {
		return cfg, false, nil
	}
	// The same command line again, over the smoke run's values.
	cfg = short
	fs = pflag.NewFlagSet(name, pflag.ContinueOnError)
	bind(fs, &cfg, &isShort)
	return cfg, true, fs.Parse(args)
}

// writeScenarioReport writes a scenario's report res: its markdown at md,
// then its JSON at js; standard error says where.
func writeScenarioReport[R any](md, js string, res R, markdown func(io.Writer, R) error, writeJSON func(path string, res R) error) error {
	f, err := os.Create(md)
	if err != nil {
		return err
	}
	err = markdown(f, res)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := writeJSON(js, res); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "# wrote", md, js)
	return nil
}

package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"

	"github.com/freshcache/freshcache/tools/bench/diag/cpusplit"
)

// createRowFile creates a new file for row under dir, named
// BACKEND-SCENARIO-RV-cCLIENTS-N.EXT with N the first number not taken
// (rv "" as "consistent"), so that repeated rows keep one file each.
func createRowFile(dir string, row *Row, ext string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("storage: %s dir: %w", ext, err)
	}
	rv := row.RV
	if rv == RVConsistent {
		rv = "consistent"
	}
	for n := 1; ; n++ {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s-c%d-%d.%s", row.Backend, row.Scenario, rv, row.Concurrency, n, ext))
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: %s file: %w", ext, err)
		}
		return f, nil
	}
}

// startRowTrace starts an execution trace for row into a new file under dir
// (Config.TraceDir) and records its path in row.Trace. The returned func
// stops the trace and closes the file. With dir empty both do nothing.
func startRowTrace(dir string, row *Row) (func() error, error) {
	return startRowRecording(dir, row, "trace", trace.Start, trace.Stop, &row.Trace)
}

// startRowCPUProfile starts a CPU profile for row into a new file under dir
// (Config.CPUProfileDir) and records its path in row.CPUProfile. The
// returned func stops the profile and closes the file. With dir empty both
// do nothing. Only one CPU profile can run per process.
func startRowCPUProfile(dir string, row *Row) (func() error, error) {
	return startRowRecording(dir, row, "pprof", pprof.StartCPUProfile, pprof.StopCPUProfile, &row.CPUProfile)
}

// startRowRecording runs start on a new file for row under dir (see
// createRowFile) and stores the file's path in *path; the returned func
// runs stop and closes the file. With dir empty both do nothing.
func startRowRecording(dir string, row *Row, ext string, start func(io.Writer) error, stop func(), path *string) (func() error, error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	f, err := createRowFile(dir, row, ext)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("storage: start %s: %w", ext, err)
	}
	*path = f.Name()
	return func() error {
		stop()
		return f.Close()
	}, nil
}

// fillCPUSplit splits row's CPU profile (cpusplit) and scales each part's
// share of the samples to the row's measured CPU per op, so that the parts
// add up to CPUPerOpMs. It does nothing for a row without a profile or ops.
func (r *Row) fillCPUSplit() error {
	if r.CPUProfile == "" || r.Ops == 0 {
		return nil
	}
	parts, total, err := cpusplit.ReadFile(r.CPUProfile)
	if err != nil {
		return err
	}
	if total <= 0 {
		return nil
	}
	r.CPUSplitUsPerOp = make(map[string]float64, len(parts))
	for name, d := range parts {
		r.CPUSplitUsPerOp[name] = float64(d) / float64(total) * r.CPUPerOpMs * 1000
	}
	return nil
}

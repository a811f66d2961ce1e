package bench

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/trace"
)

// startRowTrace starts an execution trace for row into a new file under dir
// (Config.TraceDir) and records its path in row.Trace. The returned func
// stops the trace and closes the file. With dir empty both do nothing.
func startRowTrace(dir string, row *Row) (func() error, error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: trace dir: %w", err)
	}
	rv := row.RV
	if rv == RVConsistent {
		rv = "consistent"
	}
	var f *os.File
	for n := 1; ; n++ {
		path := filepath.Join(dir, fmt.Sprintf("%s-%s-%s-c%d-%d.trace", row.Backend, row.Scenario, rv, row.Concurrency, n))
		var err error
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bench: trace file: %w", err)
		}
		break
	}
	if err := trace.Start(f); err != nil {
		_ = f.Close()
		_ = os.Remove(f.Name())
		return nil, fmt.Errorf("bench: start trace: %w", err)
	}
	row.Trace = f.Name()
	return func() error {
		trace.Stop()
		return f.Close()
	}, nil
}

package figures

import (
	"fmt"
	"slices"
	"time"
)

// The JSON of freshcache-bench's reports (tools/bench), with only
// the fields the figures read. tools/bench is a module of its own that
// requires this one, so its types cannot be imported here.

// header is what every report's JSON starts with.
type header struct {
	Date      time.Time `json:"date"`
	GitCommit string    `json:"git_commit"`
}

// storageReport is `freshcache-bench storage` (storage, storage-20k,
// storage-100k, storage-targets, consistent-reads).
type storageReport struct {
	header
	Rows []storageRow `json:"rows"`
}

type storageRow struct {
	Backend     string `json:"backend"`
	Scenario    string `json:"scenario"`
	RV          string `json:"rv"` // `""`, "0" or "N"
	Concurrency int    `json:"concurrency"`
	Sweep       bool   `json:"sweep"`
	Load        struct {
		LeaseWrites float64 `json:"lease_writes_per_sec"`
	} `json:"load"`
	GateMs        float64  `json:"gate_ms"` // the gate control's interval; 0 on other rows
	OpsPerSec     float64  `json:"ops_per_sec"`
	P50Ms         float64  `json:"p50_ms"`
	P99Ms         float64  `json:"p99_ms"`
	CPUPerOpMs    float64  `json:"cpu_per_op_ms"`
	EtcdPerOp     float64  `json:"etcd_requests_per_op"`
	WaitP50Ms     *float64 `json:"fresh_wait_p50_ms"`
	WaitP99Ms     *float64 `json:"fresh_wait_p99_ms"`
	FetchesPerOp  *float64 `json:"fetches_per_op"`
	ProgressPerOp *float64 `json:"progress_requests_per_op"`
	Watchers      int      `json:"watchers"`
}

// The rv values as the reports spell them.
const (
	rvConsistent = `""`
	rvZero       = "0"
)

// rowKey selects storage rows: the measured ones (not the sweep's, not
// the gate control's) unless sweep or gate say otherwise.
type rowKey struct {
	backend, scenario, rv string
	conc                  int
}

func (k rowKey) String() string {
	return fmt.Sprintf("%s %s rv=%s at %d clients", k.backend, k.scenario, k.rv, k.conc)
}

func (s *Source) storage(name string) (*storageReport, error) {
	return loadJSON[storageReport](s, name)
}

// rows are every measured row of k in name, in the report's order
// (repeated pairs repeat a row).
func (s *Source) rows(name string, k rowKey) ([]storageRow, error) {
	return s.rowsWhere(name, func(x storageRow) bool {
		return x.Backend == k.backend && x.Scenario == k.scenario && x.RV == k.rv && x.Concurrency == k.conc && !x.Sweep && x.GateMs == 0
	}, fmt.Sprintf("no row %s", k))
}

// rowsWhere are the rows of name that keep accepts, in the report's
// order; when there is none, the error says name has none (e.g. "no row
// ...").
func (s *Source) rowsWhere(name string, keep func(storageRow) bool, none string) ([]storageRow, error) {
	r, err := s.storage(name)
	if err != nil {
		return nil, err
	}
	var out []storageRow
	for _, x := range r.Rows {
		if keep(x) {
			out = append(out, x)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s has %s", ErrNotInResults, name, none)
	}
	return out, nil
}

// row is the one measured row of k in name.
func (s *Source) row(name string, k rowKey) (storageRow, error) {
	rs, err := s.rows(name, k)
	if err != nil {
		return storageRow{}, err
	}
	if len(rs) != 1 {
		return storageRow{}, fmt.Errorf("%w: %s has %d rows %s, not one", ErrNotInResults, name, len(rs), k)
	}
	return rs[0], nil
}

// sweepRows are the freshness sweep's rows of backend in name, by lease
// write rate.
func (s *Source) sweepRows(name, backend string) ([]storageRow, error) {
	out, err := s.rowsWhere(name, func(x storageRow) bool { return x.Sweep && x.Backend == backend }, "no sweep rows of "+backend)
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b storageRow) int { return int(a.Load.LeaseWrites - b.Load.LeaseWrites) })
	return out, nil
}

// field reads one number of a row; a missing optional one is an error.
func field(r storageRow, f func(storageRow) *float64, what string) (float64, error) {
	p := f(r)
	if p == nil {
		return 0, fmt.Errorf("%w: row %s has no %s", ErrNotInResults, rowKey{r.Backend, r.Scenario, r.RV, r.Concurrency}, what)
	}
	return *p, nil
}

// ratiosOfPairs pairs the i-th row of a with the i-th row of b (a
// repeated rv pair ran them next to each other) and returns each
// a/b of f, as the report's "median of N pairs" does.
func ratiosOfPairs(a, b []storageRow, f func(storageRow) float64) ([]float64, error) {
	if len(a) != len(b) {
		return nil, fmt.Errorf("%w: %d rows against %d, cannot pair them", ErrNotInResults, len(a), len(b))
	}
	out := make([]float64, len(a))
	for i := range a {
		out[i] = f(a[i]) / f(b[i])
	}
	return out, nil
}

func ops(r storageRow) float64 { return r.OpsPerSec }

// median is the middle value, or the mean of the two middle values.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// apiserverReport is `freshcache-bench apiserver`.
type apiserverReport struct {
	header
	Rows []struct {
		Implementation string  `json:"implementation"`
		Operation      string  `json:"operation"`
		RV             string  `json:"rv"`
		Clients        int     `json:"clients"`
		OpsPerSec      float64 `json:"ops_per_sec"`
		EtcdPerOp      float64 `json:"etcd_requests_per_op"`
	} `json:"apiserver"`
}

// apiserverRow is one row of apiserver.json: ops/s and etcd requests per
// op.
func (s *Source) apiserverRow(impl, op, rv string, clients int) (opsPerSec, etcdPerOp float64, err error) {
	r, err := loadJSON[apiserverReport](s, "apiserver.json")
	if err != nil {
		return 0, 0, err
	}
	for _, x := range r.Rows {
		if x.Implementation == impl && x.Operation == op && x.RV == rv && x.Clients == clients {
			return x.OpsPerSec, x.EtcdPerOp, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: apiserver.json has no row %s %s rv=%s at %d clients", ErrNotInResults, impl, op, rv, clients)
}

// memoryReport is `freshcache-bench memory`.
type memoryReport struct {
	header
	Rows []struct {
		Backend        string  `json:"backend"`
		Pods           int     `json:"pods"`
		BytesPerObject float64 `json:"bytes_per_object"`
	} `json:"memory"`
}

func (s *Source) heapPerObject(name, backend string, pods int) (float64, error) {
	r, err := loadJSON[memoryReport](s, name)
	if err != nil {
		return 0, err
	}
	for _, x := range r.Rows {
		if x.Backend == backend && x.Pods == pods {
			return x.BytesPerObject, nil
		}
	}
	return 0, fmt.Errorf("%w: %s has no %s row at %d pods", ErrNotInResults, name, backend, pods)
}

// stallReport is `freshcache-bench stall`.
type stallReport struct {
	Commit         string    `json:"commit"`
	When           time.Time `json:"when"`
	Configurations []struct {
		Name         string `json:"name"`
		APIServerRSS struct {
			Growth float64 `json:"growth"`
		} `json:"apiserver_rss"`
	} `json:"configurations"`
}

// watchlistReport is `freshcache-bench watchlist`.
type watchlistReport struct {
	header
	Runs []struct {
		Config string `json:"config"`
		Phases []struct {
			Name  string `json:"name"`
			Reads []struct {
				Kind  string  `json:"kind"`
				P99Ms float64 `json:"p99_ms"`
			} `json:"reads"`
		} `json:"phases"`
	} `json:"runs"`
}

package figures

import (
	"fmt"
	"slices"
	"strconv"
)

// The storage-level benchmarks' figures: storage*.json (the consistent-read
// run is keys_consistent.go, apiserver and memory keys_apiserver.go).

// rowFigure is f of one measured row of a storage report.
func rowFigure(key, file, what string, k rowKey, prec int, f func(storageRow) float64) Figure {
	return Figure{Key: key, From: []string{file}, What: what, Get: func(s *Source) (Value, error) {
		r, err := s.row(file, k)
		if err != nil {
			return Value{}, err
		}
		return F(f(r), prec), nil
	}}
}

// ratioFigure is a/b of f over two rows of one report, as its "Targets"
// table computes same-run ratios.
func ratioFigure(key, file, what string, a, b rowKey, prec int, f func(storageRow) float64) Figure {
	return Figure{Key: key, From: []string{file}, What: what, Get: func(s *Source) (Value, error) {
		ra, err := s.row(file, a)
		if err != nil {
			return Value{}, err
		}
		rb, err := s.row(file, b)
		if err != nil {
			return Value{}, err
		}
		return F(f(ra)/f(rb), prec), nil
	}}
}

// commitFigure is the commit a JSON report was run at, as 7 hex digits in
// backticks (a span cannot sit inside a code span).
func commitFigure(name string) Figure {
	file := name + ".json"
	return Figure{Key: name + ".commit", From: []string{file}, What: "the commit " + file + " was run at", Get: func(s *Source) (Value, error) {
		h, err := loadJSON[header](s, file)
		if err != nil {
			return Value{}, err
		}
		if len(h.GitCommit) < 7 {
			return Value{}, fmt.Errorf("%w: %s names no commit", ErrNotInResults, file)
		}
		return Text("`" + h.GitCommit[:7] + "`"), nil
	}}
}

func cpu(r storageRow) float64       { return r.CPUPerOpMs }
func etcdPerOp(r storageRow) float64 { return r.EtcdPerOp }
func p50(r storageRow) float64       { return r.P50Ms }
func p99(r storageRow) float64       { return r.P99Ms }
func waitP99(r storageRow) *float64  { return r.WaitP99Ms }
func waitP50(r storageRow) *float64  { return r.WaitP50Ms }

// sig3 prints x with three significant digits (4.95, 98.5, 315), as
// the KEP's sweep table does.
func sig3(x float64) Value {
	switch {
	case x < 10:
		return F(x, 2)
	case x < 100:
		return F(x, 1)
	}
	return F(x, 0)
}

func storageFigures() []Figure {
	const s20, st, s100, cr = "storage-20k.json", "storage-targets.json", "storage-100k.json", "consistent-reads.json"
	fresh := func(scenario, rv string, conc int) rowKey { return rowKey{"freshcache", scenario, rv, conc} }
	up := func(scenario, rv string, conc int) rowKey { return rowKey{"upstream", scenario, rv, conc} }
	etcdGet := rowKey{"etcd", "get", rvConsistent, 32}
	ln, lnZero := fresh("list-node", rvConsistent, 32), fresh("list-node", rvZero, 32)
	uln, ulnZero := up("list-node", rvConsistent, 32), up("list-node", rvZero, 32)

	figs := []Figure{
		commitFigure("storage-20k"), commitFigure("storage-100k"),
		commitFigure("memory-full"), commitFigure("apiserver"), commitFigure("consistent-reads"), commitFigure("storage-targets"),
		commitFigure("cluster"), commitFigure("watchlist"),
		{Key: "storage-20k.date", From: []string{s20}, What: "when storage-20k ran", Get: func(s *Source) (Value, error) {
			r, err := s.storage(s20)
			if err != nil {
				return Value{}, err
			}
			return Text(r.Date.UTC().Format("2006-01-02 15:04 UTC")), nil
		}},

		// storage-20k: 20,000 pods, 32 clients unless the key says .c1/.c4.
		rowFigure("storage-20k.list-node.upstream.ops", s20, "upstream's consistent LIST by node, ops/s", uln, 0, ops),
		rowFigure("storage-20k.list-node.freshcache.ops", s20, "freshcache's consistent LIST by node, ops/s", ln, 0, ops),
		ratioFigure("storage-20k.list-node.fresh-vs-upstream", s20, "consistent LIST by node, freshcache over upstream", ln, uln, 1, ops),
		rowFigure("storage-20k.list-node.upstream.etcd-per-op", s20, "etcd requests per consistent LIST by node, upstream", uln, 2, etcdPerOp),
		rowFigure("storage-20k.list-node.freshcache.etcd-per-op", s20, "etcd requests per consistent LIST by node, freshcache", ln, 2, etcdPerOp),
		rowFigure("storage-20k.list-node.freshcache.etcd-per-op.c1", s20, "etcd requests per consistent LIST by node, freshcache, 1 client", fresh("list-node", rvConsistent, 1), 2, etcdPerOp),
		rowFigure("storage-20k.get.upstream.etcd-per-op", s20, "etcd requests per consistent GET, upstream (sent to etcd)", up("get", rvConsistent, 32), 2, etcdPerOp),
		rowFigure("storage-20k.get.freshcache.etcd-per-op", s20, "etcd requests per consistent GET, freshcache", fresh("get", rvConsistent, 32), 2, etcdPerOp),
		rowFigure("storage-20k.get.freshcache.etcd-per-op.c1", s20, "etcd requests per consistent GET, freshcache, 1 client", fresh("get", rvConsistent, 1), 2, etcdPerOp),
		rowFigure("storage-20k.get.upstream.ops", s20, "upstream's consistent GET (served by etcd), ops/s", up("get", rvConsistent, 32), 0, ops),
		rowFigure("storage-20k.get.freshcache.ops", s20, "freshcache's consistent GET, ops/s", fresh("get", rvConsistent, 32), 0, ops),
		ratioFigure("storage-20k.get.fresh-vs-etcd", s20, "freshcache's consistent GET over etcd's GET", fresh("get", rvConsistent, 32), etcdGet, 1, ops),
		rowFigure("storage-20k.list-node-rv0.upstream.ops", s20, "upstream's rv=0 LIST by node, ops/s", ulnZero, 0, ops),
		rowFigure("storage-20k.list-node-rv0.freshcache.ops", s20, "freshcache's rv=0 LIST by node, ops/s", lnZero, 0, ops),
		ratioFigure("storage-20k.list-node-rv0.fresh-vs-upstream", s20, "rv=0 LIST by node, freshcache over upstream", lnZero, ulnZero, 2, ops),
		rowFigure("storage-20k.list-node.freshcache.p50", s20, "freshcache's consistent LIST by node, p50 ms", ln, 2, p50),
		rowFigure("storage-20k.list-node.upstream.p50", s20, "upstream's consistent LIST by node, p50 ms", uln, 2, p50),
		rowFigure("storage-20k.list-node.freshcache.p99", s20, "freshcache's consistent LIST by node, p99 ms", ln, 2, p99),
		rowFigure("storage-20k.list-node.upstream.p99", s20, "upstream's consistent LIST by node, p99 ms", uln, 2, p99),
		rowFigure("storage-20k.get.freshcache.p50.c1", s20, "freshcache's consistent GET, 1 client, p50 ms", fresh("get", rvConsistent, 1), 2, p50),
		rowFigure("storage-20k.get.upstream.p50.c1", s20, "upstream's consistent GET (etcd), 1 client, p50 ms", up("get", rvConsistent, 1), 2, p50),
		rowFigure("storage-20k.get.freshcache.p50", s20, "freshcache's consistent GET, p50 ms", fresh("get", rvConsistent, 32), 2, p50),
		rowFigure("storage-20k.get.upstream.p50", s20, "upstream's consistent GET (etcd), p50 ms", up("get", rvConsistent, 32), 2, p50),
		rowFigure("storage-20k.list-node.freshcache.cpu", s20, "CPU ms per consistent LIST by node, freshcache", ln, 2, cpu),
		rowFigure("storage-20k.list-node.upstream.cpu", s20, "CPU ms per consistent LIST by node, upstream", uln, 2, cpu),
		rowFigure("storage-20k.list-node-rv0.freshcache.cpu", s20, "CPU ms per rv=0 LIST by node, freshcache", lnZero, 2, cpu),
		rowFigure("storage-20k.list-node-rv0.upstream.cpu", s20, "CPU ms per rv=0 LIST by node, upstream", ulnZero, 2, cpu),
		rowFigure("storage-20k.watch-fanout-rv0.upstream.ops", s20, "upstream's watch fan-out at rv=0, events/s", up("watch-fanout", rvZero, 32), 0, ops),
		rowFigure("storage-20k.watch-fanout-rv0.freshcache.ops", s20, "freshcache's watch fan-out at rv=0, events/s", fresh("watch-fanout", rvZero, 32), 0, ops),
		ratioFigure("storage-20k.watch-fanout-rv0.fresh-vs-upstream", s20, "watch fan-out at rv=0, freshcache over upstream", fresh("watch-fanout", rvZero, 32), up("watch-fanout", rvZero, 32), 2, ops),
		{Key: "storage-20k.watch-fanout.watchers", From: []string{s20}, What: "watchers in the 32-client fan-out rows", Get: func(s *Source) (Value, error) {
			r, err := s.row(s20, fresh("watch-fanout", rvZero, 32))
			if err != nil {
				return Value{}, err
			}
			return Count(r.Watchers), nil
		}},
		ratioFigure("storage-20k.list-all-rv0.fresh-vs-upstream", s20, "rv=0 LIST of every pod, freshcache over upstream", fresh("list-all", rvZero, 32), up("list-all", rvZero, 32), 2, ops),
		{Key: "storage-20k.etcd.list-node.cpu-s", From: []string{s20}, What: "CPU seconds per etcd LIST by node, over every etcd LIST row", Get: etcdListCPU(s20)},
		{Key: "storage-100k.etcd.list-node.cpu-s", From: []string{s100}, What: "CPU seconds per etcd LIST by node at 100,000 pods (the sweep's etcd rows)", Get: etcdListCPU(s100)},

		// The freshness wait of freshcache's consistent LIST by node.
		waitFigure("storage-20k.list-node.freshcache.wait-p99.c1", s20, fresh("list-node", rvConsistent, 1)),
		waitFigure("storage-20k.list-node.freshcache.wait-p99.c4", s20, fresh("list-node", rvConsistent, 4)),
		waitFigure("storage-20k.list-node.freshcache.wait-p99", s20, ln),

		// The freshness sweep: LIST by node at rv="", 4 clients, 0–400 lease writes/s.
		sweepWaitFigure("storage-20k.sweep.upstream.wait-p99", "upstream", 1),
		sweepWaitFigure("storage-20k.sweep.freshcache.wait-p99", "freshcache", 2),
		sweepFigure("storage-20k.sweep.upstream.ops-at-0", "upstream", 0, "ops/s", 0, ops),
		sweepFigure("storage-20k.sweep.freshcache.ops-at-0", "freshcache", 0, "ops/s", 0, ops),
		sweepFigure("storage-20k.sweep.upstream.ops-at-50", "upstream", 50, "ops/s", 0, ops),
		sweepFigure("storage-20k.sweep.freshcache.ops-at-50", "freshcache", 50, "ops/s", 0, ops),
		sweepFigure("storage-20k.sweep.upstream.etcd-per-op-at-0", "upstream", 0, "etcd requests per LIST", 2, etcdPerOp),
		sweepFigure("storage-20k.sweep.freshcache.etcd-per-op-at-0", "freshcache", 0, "etcd requests per LIST", 2, etcdPerOp),
		{Key: "storage-20k.sweep.table", From: []string{s20}, What: "the freshness sweep as a table: wait p99 and ops/s by lease write rate", Get: sweepTable},

		// storage-targets: the harness's default load at 32 clients, with the gate control.
		{Key: "storage-targets.target.get-vs-etcd", From: []string{st}, What: "met or missed: consistent GET ≥ 3× etcd's GET at the harness's default load", Get: func(s *Source) (Value, error) {
			a, err := s.row(st, fresh("get", rvConsistent, 32))
			if err != nil {
				return Value{}, err
			}
			b, err := s.row(st, etcdGet)
			if err != nil {
				return Value{}, err
			}
			if a.OpsPerSec/b.OpsPerSec >= 3 {
				return Text("met"), nil
			}
			return Text("missed"), nil
		}},
		ratioFigure("storage-targets.get.fresh-vs-etcd", st, "freshcache's consistent GET over etcd's GET", fresh("get", rvConsistent, 32), etcdGet, 2, ops),
		rowFigure("storage-targets.list-node.freshcache.cpu", st, "CPU ms per consistent LIST by node, freshcache", ln, 2, cpu),
		rowFigure("storage-targets.list-node.upstream.cpu", st, "CPU ms per consistent LIST by node, upstream", uln, 2, cpu),
		ratioFigure("storage-targets.watch-fanout-rv0.fresh-vs-upstream", st, "watch fan-out at rv=0, freshcache over upstream", fresh("watch-fanout", rvZero, 32), up("watch-fanout", rvZero, 32), 2, ops),
		ratioFigure("storage-targets.list-all-rv0.fresh-vs-upstream", st, "rv=0 LIST of every pod, freshcache over upstream", fresh("list-all", rvZero, 32), up("list-all", rvZero, 32), 2, ops),
		{Key: "storage-targets.gate-control.p99", From: []string{st}, What: "p99 ms of the gate control's rv=0 LISTs (a timer gate, no etcd), both caches", Get: func(s *Source) (Value, error) {
			rows, err := s.gateRows(st, "")
			if err != nil {
				return Value{}, err
			}
			return Range(mapRows(rows, p99), 0), nil
		}},
		{Key: "storage-targets.gate-control.fresh-vs-rv0", From: []string{st}, What: "freshcache's gated rv=0 LIST over its plain rv=0 LIST, every gate", Get: func(s *Source) (Value, error) {
			rows, err := s.gateRows(st, "freshcache")
			if err != nil {
				return Value{}, err
			}
			plain, err := s.row(st, lnZero)
			if err != nil {
				return Value{}, err
			}
			var rs []float64
			for _, r := range rows {
				rs = append(rs, r.OpsPerSec/plain.OpsPerSec)
			}
			return Range(rs, 2), nil
		}},
		{Key: "storage-targets.gate-control.intervals", From: []string{st}, What: "how often the gate control's gates open, ms", Get: func(s *Source) (Value, error) {
			rows, err := s.gateRows(st, "freshcache")
			if err != nil {
				return Value{}, err
			}
			var vs []Value
			for _, r := range rows {
				vs = append(vs, Text(strconv.FormatFloat(r.GateMs, 'f', -1, 64)))
			}
			if len(vs) == 1 {
				return vs[0], nil
			}
			return Join(List(", ", vs[:len(vs)-1]...), " and ", vs[len(vs)-1]), nil
		}},

		// storage-100k: 100,000 pods on 5,000 nodes.
		rowFigure("storage-100k.list-node.upstream.ops", s100, "upstream's consistent LIST by node, ops/s", uln, 0, ops),
		rowFigure("storage-100k.list-node.freshcache.ops", s100, "freshcache's consistent LIST by node, ops/s", ln, 0, ops),
		ratioFigure("storage-100k.list-node.fresh-vs-upstream", s100, "consistent LIST by node, freshcache over upstream", ln, uln, 2, ops),
		ratioFigure("storage-100k.list-all-rv0.fresh-vs-upstream", s100, "rv=0 LIST of every pod, freshcache over upstream", fresh("list-all", rvZero, 32), up("list-all", rvZero, 32), 2, ops),
	}
	figs = append(figs, consistentReadsFigures(cr, ln, lnZero, uln, ulnZero, etcdGet)...)
	figs = append(figs, crossRunFigures(s20, st, cr, ln, lnZero)...)
	figs = append(figs, apiserverFigures()...)
	return append(figs, memoryFigures()...)
}

func mapRows(rows []storageRow, f func(storageRow) float64) []float64 {
	out := make([]float64, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// gateRows are the gate control's rows of backend ("" for both), by
// gate interval.
func (s *Source) gateRows(name, backend string) ([]storageRow, error) {
	out, err := s.rowsWhere(name, func(x storageRow) bool { return x.GateMs > 0 && (backend == "" || x.Backend == backend) }, "no gate control rows")
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(out, func(a, b storageRow) int {
		switch {
		case a.GateMs < b.GateMs:
			return -1
		case a.GateMs > b.GateMs:
			return 1
		}
		return 0
	})
	return out, nil
}

func etcdListCPU(file string) func(*Source) (Value, error) {
	return func(s *Source) (Value, error) {
		r, err := s.storage(file)
		if err != nil {
			return Value{}, err
		}
		var secs []float64
		for _, x := range r.Rows {
			if x.Backend == "etcd" && x.Scenario == "list-node" {
				secs = append(secs, x.CPUPerOpMs/1000)
			}
		}
		if len(secs) == 0 {
			return Value{}, fmt.Errorf("%w: %s has no etcd LIST rows", ErrNotInResults, file)
		}
		return Range(secs, 2), nil
	}
}

func waitFigure(key, file string, k rowKey) Figure {
	return Figure{Key: key, From: []string{file}, What: "freshness wait p99 ms of " + k.String(), Get: func(s *Source) (Value, error) {
		r, err := s.row(file, k)
		if err != nil {
			return Value{}, err
		}
		w, err := field(r, waitP99, "freshness wait p99")
		if err != nil {
			return Value{}, err
		}
		return F(w, 2), nil
	}}
}

// sweepWaitFigure is the range of backend's wait p99 over the sweep rows
// with lease writes (at 0 nothing moves the revision, so no tick waits).
func sweepWaitFigure(key, backend string, prec int) Figure {
	const file = "storage-20k.json"
	return Figure{Key: key, From: []string{file}, What: backend + "'s freshness wait p99 ms in the sweep, over the rates with lease writes", Get: func(s *Source) (Value, error) {
		rows, err := s.sweepRows(file, backend)
		if err != nil {
			return Value{}, err
		}
		var ws []float64
		for _, r := range rows {
			if r.Load.LeaseWrites == 0 {
				continue
			}
			w, err := field(r, waitP99, "freshness wait p99")
			if err != nil {
				return Value{}, err
			}
			ws = append(ws, w)
		}
		return Range(ws, prec), nil
	}}
}

func sweepFigure(key, backend string, rate float64, what string, prec int, f func(storageRow) float64) Figure {
	const file = "storage-20k.json"
	return Figure{Key: key, From: []string{file}, What: fmt.Sprintf("%s's %s in the sweep at %g lease writes/s", backend, what, rate), Get: func(s *Source) (Value, error) {
		rows, err := s.sweepRows(file, backend)
		if err != nil {
			return Value{}, err
		}
		for _, r := range rows {
			if r.Load.LeaseWrites == rate {
				return F(f(r), prec), nil
			}
		}
		return Value{}, fmt.Errorf("%w: no sweep row of %s at %g lease writes/s", ErrNotInResults, backend, rate)
	}}
}

func sweepTable(s *Source) (Value, error) {
	const file = "storage-20k.json"
	up, err := s.sweepRows(file, "upstream")
	if err != nil {
		return Value{}, err
	}
	fc, err := s.sweepRows(file, "freshcache")
	if err != nil {
		return Value{}, err
	}
	if len(up) != len(fc) {
		return Value{}, fmt.Errorf("%w: %d upstream sweep rows against %d of freshcache", ErrNotInResults, len(up), len(fc))
	}
	row := func(label string, rows []storageRow, cell func(storageRow) (Value, error)) ([]any, error) {
		parts := []any{"| " + label + " |"}
		for _, r := range rows {
			v, err := cell(r)
			if err != nil {
				return nil, err
			}
			parts = append(parts, " ", v, " |")
		}
		return append(parts, "\n"), nil
	}
	wait := func(r storageRow) (Value, error) {
		w, err := field(r, waitP99, "freshness wait p99")
		return sig3(w), err
	}
	opsCell := func(r storageRow) (Value, error) { return F(r.OpsPerSec, 0), nil }
	rate := func(r storageRow) (Value, error) { return F(r.Load.LeaseWrites, 0), nil }
	var parts []any
	for _, l := range []struct {
		label string
		rows  []storageRow
		cell  func(storageRow) (Value, error)
	}{
		{"lease writes/s", up, rate},
		{"upstream wait p99 ms", up, wait},
		{"freshcache wait p99 ms", fc, wait},
		{"upstream ops/s", up, opsCell},
		{"freshcache ops/s", fc, opsCell},
	} {
		p, err := row(l.label, l.rows, l.cell)
		if err != nil {
			return Value{}, err
		}
		parts = append(parts, p...)
		if l.label == "lease writes/s" {
			delim := "|---|"
			for range up {
				delim += "---:|"
			}
			parts = append(parts, delim+"\n")
		}
	}
	v := Join(parts...)
	v.Text = v.Text[:len(v.Text)-1]
	return v, nil
}

package figures

import (
	"fmt"
	"slices"
)

// The consistent-read target run's figures (consistent-reads.json) and
// those that set it beside the storage runs.

// consistentReadsFigures are the consistent-read target shape's: every
// rv pair ran three times; a ratio is the median over the pairs.
func consistentReadsFigures(cr string, ln, lnZero, uln, ulnZero, etcdGet rowKey) []Figure {
	get := rowKey{"freshcache", "get", rvConsistent, 32}
	pairs := func(a, b rowKey, f func(storageRow) float64) func(*Source) ([]float64, error) {
		return func(s *Source) ([]float64, error) {
			ra, err := s.rows(cr, a)
			if err != nil {
				return nil, err
			}
			rb, err := s.rows(cr, b)
			if err != nil {
				return nil, err
			}
			return ratiosOfPairs(ra, rb, f)
		}
	}
	perRow := func(k rowKey, f func(storageRow) (float64, error)) func(*Source) ([]float64, error) {
		return func(s *Source) ([]float64, error) {
			rows, err := s.rows(cr, k)
			if err != nil {
				return nil, err
			}
			var out []float64
			for _, r := range rows {
				x, err := f(r)
				if err != nil {
					return nil, err
				}
				out = append(out, x)
			}
			return out, nil
		}
	}
	opt := func(f func(storageRow) *float64, what string) func(storageRow) (float64, error) {
		return func(r storageRow) (float64, error) { return field(r, f, what) }
	}
	plain := func(f func(storageRow) float64) func(storageRow) (float64, error) {
		return func(r storageRow) (float64, error) { return f(r), nil }
	}
	fetches := func(r storageRow) *float64 { return r.FetchesPerOp }
	progress := func(r storageRow) *float64 { return r.ProgressPerOp }

	type series = func(*Source) ([]float64, error)
	lnVsUp, getVsEtcd, lnVsZero := pairs(ln, uln, ops), pairs(get, etcdGet, ops), pairs(ln, lnZero, ops)
	lnWait, getWait := perRow(ln, opt(waitP99, "freshness wait p99")), perRow(get, opt(waitP99, "freshness wait p99"))
	med := func(key, what string, xs series, render func(float64) Value) Figure {
		return Figure{Key: key, From: []string{cr}, What: what, Get: func(s *Source) (Value, error) {
			v, err := xs(s)
			if err != nil {
				return Value{}, err
			}
			return render(median(v)), nil
		}}
	}
	rng := func(key, what string, xs series, prec int) Figure {
		return Figure{Key: key, From: []string{cr}, What: what, Get: func(s *Source) (Value, error) {
			v, err := xs(s)
			if err != nil {
				return Value{}, err
			}
			return Range(v, prec), nil
		}}
	}
	prec := func(p int) func(float64) Value { return func(x float64) Value { return F(x, p) } }
	// target is "met" or "missed": the median of xs against a target
	// (at least, or at most, bound).
	type target struct {
		key, what string
		xs        series
		bound     float64
		atLeast   bool
	}
	targets := []target{
		{"consistent-reads.target.list-node-vs-upstream", "consistent LIST by node ≥ 10× upstream's", lnVsUp, 10, true},
		{"consistent-reads.target.get-vs-etcd", "consistent GET ≥ 3× etcd's GET", getVsEtcd, 3, true},
		{"consistent-reads.target.get-wait", "GET freshness wait p99 ≤ 10 ms", getWait, 10, false},
		{"consistent-reads.target.list-node-vs-rv0", "consistent LIST by node ≥ 0.8× freshcache's rv=0 LIST", lnVsZero, 0.8, true},
		{"consistent-reads.target.list-wait", "LIST freshness wait p99 ≤ 10 ms", lnWait, 10, false},
	}
	met := func(s *Source, t target) (bool, error) {
		v, err := t.xs(s)
		if err != nil {
			return false, err
		}
		m := median(v)
		return t.atLeast && m >= t.bound || !t.atLeast && m <= t.bound, nil
	}
	figs := []Figure{
		med("consistent-reads.list-node.fresh-vs-upstream", "consistent LIST by node, freshcache over upstream, median of the pairs", lnVsUp, prec(1)),
		rng("consistent-reads.list-node.fresh-vs-upstream.pairs", "consistent LIST by node, freshcache over upstream, every pair", lnVsUp, 1),
		rng("consistent-reads.list-node.upstream.p50", "upstream's consistent LIST by node, p50 ms, every row", perRow(uln, plain(p50)), 1),
		rng("consistent-reads.list-node.upstream.ops", "upstream's consistent LIST by node, ops/s, every row", perRow(uln, plain(ops)), 0),
		rng("consistent-reads.list-node.freshcache.ops", "freshcache's consistent LIST by node, ops/s, every row", perRow(ln, plain(ops)), 0),
		rng("consistent-reads.list-node-rv0.upstream.ops", "upstream's rv=0 LIST by node, ops/s, every row", perRow(ulnZero, plain(ops)), 0),
		med("consistent-reads.get.fresh-vs-etcd", "consistent GET, freshcache over etcd's GET, median of the pairs", getVsEtcd, prec(2)),
		rng("consistent-reads.get.fresh-vs-etcd.pairs", "consistent GET, freshcache over etcd's GET, every pair", getVsEtcd, 2),
		med("consistent-reads.get.freshcache.wait-p99", "freshcache's consistent GET, freshness wait p99 ms, median of the rows", getWait, prec(2)),
		med("consistent-reads.get.freshcache.wait-p50", "freshcache's consistent GET, freshness wait p50 ms, median of the rows", perRow(get, opt(waitP50, "freshness wait p50")), prec(2)),
		med("consistent-reads.list-node.fresh-vs-rv0", "freshcache's consistent LIST by node over its rv=0 LIST, median of the pairs", lnVsZero, prec(2)),
		rng("consistent-reads.list-node.fresh-vs-rv0.pairs", "freshcache's consistent LIST by node over its rv=0 LIST, every pair", lnVsZero, 2),
		rng("consistent-reads.list-node.freshcache.wait-p99", "freshcache's consistent LIST by node, freshness wait p99 ms, every row", lnWait, 0),
		med("consistent-reads.list-node.freshcache.wait-p50", "freshcache's consistent LIST by node, freshness wait p50 ms, median of the rows", perRow(ln, opt(waitP50, "freshness wait p50")), prec(1)),
		med("consistent-reads.list-node.fetches-per-read", "revision fetches per consistent LIST by node, median of the rows", perRow(ln, opt(fetches, "fetches per op")), prec(2)),
		med("consistent-reads.list-node.reads-per-fetch", "consistent LISTs by node per revision fetch (1 / fetches per read)", perRow(ln, opt(fetches, "fetches per op")), func(x float64) Value { return F(1/x, 0) }),
		med("consistent-reads.get.fetches-per-read", "revision fetches per consistent GET, median of the rows", perRow(get, opt(fetches, "fetches per op")), prec(2)),
		med("consistent-reads.list-node.progress-per-read", "progress requests per consistent LIST by node, median of the rows", perRow(ln, opt(progress, "progress requests per op")), prec(3)),
		med("consistent-reads.get.progress-per-read", "progress requests per consistent GET, median of the rows", perRow(get, opt(progress, "progress requests per op")), prec(3)),
		{Key: "consistent-reads.pair-count", From: []string{cr}, What: "how many rv pairs the medians are over, spelt", Get: func(s *Source) (Value, error) {
			v, err := lnVsZero(s)
			return Word(len(v)), err
		}},
		{Key: "consistent-reads.targets-missed", From: []string{cr}, What: "how many of the five consistent-read targets the medians miss, spelt", Get: func(s *Source) (Value, error) {
			n := 0
			for _, t := range targets {
				ok, err := met(s, t)
				if err != nil {
					return Value{}, err
				}
				if !ok {
					n++
				}
			}
			return Capitalized(Word(n)), nil
		}},
	}
	for _, t := range targets {
		figs = append(figs, Figure{Key: t.key, From: []string{cr}, What: "met or missed: " + t.what, Get: func(s *Source) (Value, error) {
			ok, err := met(s, t)
			if err != nil {
				return Value{}, err
			}
			if ok {
				return Text("met"), nil
			}
			return Text("missed"), nil
		}})
	}
	return figs
}

// crossRunFigures compare or pool several storage runs.
func crossRunFigures(s20, st, cr string, ln, lnZero rowKey) []Figure {
	return []Figure{
		{Key: "runs.list-node.fresh-vs-rv0", From: []string{s20, st, cr}, What: "freshcache's consistent LIST by node over its rv=0 LIST at 32 clients, over storage-20k, storage-targets and every consistent-reads pair", Get: func(s *Source) (Value, error) {
			var rs []float64
			for _, file := range []string{s20, st, cr} {
				a, err := s.rows(file, ln)
				if err != nil {
					return Value{}, err
				}
				b, err := s.rows(file, lnZero)
				if err != nil {
					return Value{}, err
				}
				r, err := ratiosOfPairs(a, b, ops)
				if err != nil {
					return Value{}, err
				}
				rs = append(rs, r...)
			}
			return Range(rs, 2), nil
		}},
		{Key: "runs.list-node.upstream.default-load.ops", From: []string{s20, st}, What: "upstream's consistent LIST by node at the harness's default load (10 pod writes/s), 32 clients, ops/s, storage-20k and storage-targets", Get: defaultLoad(s20, st, ops, 0)},
		{Key: "runs.list-node.upstream.default-load.p50", From: []string{s20, st}, What: "upstream's consistent LIST by node at the harness's default load, 32 clients, p50 ms, storage-20k and storage-targets", Get: defaultLoad(s20, st, p50, 1)},
		{Key: "runs.throughput-spread", From: []string{s20, st}, What: "how far the same row's ops/s moved between storage-20k and storage-targets (same shape and load, 32 clients): median and largest change, %", Get: func(s *Source) (Value, error) {
			a, err := s.storage(s20)
			if err != nil {
				return Value{}, err
			}
			b, err := s.storage(st)
			if err != nil {
				return Value{}, err
			}
			var changes []float64
			for _, y := range b.Rows {
				if y.Sweep || y.GateMs > 0 {
					continue
				}
				for _, x := range a.Rows {
					if !x.Sweep && x.GateMs == 0 && x.Backend == y.Backend && x.Scenario == y.Scenario && x.RV == y.RV && x.Concurrency == y.Concurrency {
						ch := y.OpsPerSec/x.OpsPerSec - 1
						changes = append(changes, 100*max(ch, -ch))
					}
				}
			}
			if len(changes) == 0 {
				return Value{}, fmt.Errorf("%w: %s and %s share no row", ErrNotInResults, s20, st)
			}
			return Join("a median of ", F(median(changes), 0), "% and up to ", F(slices.Max(changes), 0), "%"), nil
		}},
	}
}

// defaultLoad is the range of f of upstream's consistent LIST by node at
// 32 clients over two runs at the harness's default load.
func defaultLoad(a, b string, f func(storageRow) float64, prec int) func(*Source) (Value, error) {
	return func(s *Source) (Value, error) {
		var xs []float64
		for _, file := range []string{a, b} {
			r, err := s.row(file, rowKey{"upstream", "list-node", rvConsistent, 32})
			if err != nil {
				return Value{}, err
			}
			xs = append(xs, f(r))
		}
		return Range(xs, prec), nil
	}
}

package figures

import (
	"fmt"
)

// The apiserver-level and memory benchmarks' figures: apiserver.json,
// memory*.json.

func apiserverFigures() []Figure {
	const file = "apiserver.json"
	opsOf := func(impl, op, rv string, clients int) func(*Source) (float64, error) {
		return func(s *Source) (float64, error) {
			o, _, err := s.apiserverRow(impl, op, rv, clients)
			return o, err
		}
	}
	one := func(key, what string, prec int, f func(*Source) (float64, error)) Figure {
		return Figure{Key: key, From: []string{file}, What: what, Get: func(s *Source) (Value, error) {
			x, err := f(s)
			return F(x, prec), err
		}}
	}
	ratio := func(key, what string, prec int, a, b func(*Source) (float64, error)) Figure {
		return one(key, what, prec, func(s *Source) (float64, error) {
			x, err := a(s)
			if err != nil {
				return 0, err
			}
			y, err := b(s)
			return x / y, err
		})
	}
	etcdOf := func(impl string, clients int) func(*Source) (float64, error) {
		return func(s *Source) (float64, error) {
			_, e, err := s.apiserverRow(impl, "get", rvConsistent, clients)
			return e, err
		}
	}
	return []Figure{
		one("apiserver.list-node.upstream.ops.c1", "upstream's consistent LIST by node through kube-apiserver, 1 client, ops/s", 1, opsOf("upstream", "list-node", rvConsistent, 1)),
		one("apiserver.list-node.freshcache.ops.c1", "freshcache's consistent LIST by node through kube-apiserver, 1 client, ops/s", 1, opsOf("freshcache", "list-node", rvConsistent, 1)),
		ratio("apiserver.list-node.fresh-vs-upstream.c1", "consistent LIST by node through kube-apiserver, 1 client, freshcache over upstream", 1, opsOf("freshcache", "list-node", rvConsistent, 1), opsOf("upstream", "list-node", rvConsistent, 1)),
		one("apiserver.list-node.upstream.ops", "upstream's consistent LIST by node through kube-apiserver, 32 clients, ops/s", 0, opsOf("upstream", "list-node", rvConsistent, 32)),
		one("apiserver.list-node.freshcache.ops", "freshcache's consistent LIST by node through kube-apiserver, 32 clients, ops/s", 0, opsOf("freshcache", "list-node", rvConsistent, 32)),
		ratio("apiserver.list-node.fresh-vs-upstream", "consistent LIST by node through kube-apiserver, 32 clients, freshcache over upstream", 2, opsOf("freshcache", "list-node", rvConsistent, 32), opsOf("upstream", "list-node", rvConsistent, 32)),
		ratio("apiserver.list-node.fresh-vs-rv0", "freshcache's consistent LIST by node over its rv=0 LIST through kube-apiserver, 32 clients", 2, opsOf("freshcache", "list-node", rvConsistent, 32), opsOf("freshcache", "list-node", rvZero, 32)),
		ratio("apiserver.list-node.fresh-vs-rv0.c1", "freshcache's consistent LIST by node over its rv=0 LIST through kube-apiserver, 1 client", 2, opsOf("freshcache", "list-node", rvConsistent, 1), opsOf("freshcache", "list-node", rvZero, 1)),
		one("apiserver.get.upstream.etcd-per-op", "etcd requests per consistent GET through upstream's kube-apiserver, 32 clients", 2, etcdOf("upstream", 32)),
		one("apiserver.get.freshcache.etcd-per-op", "etcd requests per consistent GET through freshcache's kube-apiserver, 32 clients", 2, etcdOf("freshcache", 32)),
		{Key: "apiserver.rv0-slower-rows", From: []string{file}, What: "of the rv=0 rows (LIST by node and GET, 1 and 32 clients), in how many freshcache is slower than upstream, spelt", Get: func(s *Source) (Value, error) {
			slower, total := 0, 0
			for _, op := range []string{"list-node", "get"} {
				for _, c := range []int{1, 32} {
					f, err := opsOf("freshcache", op, rvZero, c)(s)
					if err != nil {
						return Value{}, err
					}
					u, err := opsOf("upstream", op, rvZero, c)(s)
					if err != nil {
						return Value{}, err
					}
					total++
					if f < u {
						slower++
					}
				}
			}
			return Join(Word(slower), " of ", Word(total)), nil
		}},
	}
}

func memoryFigures() []Figure {
	const file = "memory-full.json"
	heap := func(key, backend string, pods int) Figure {
		return Figure{Key: key, From: []string{file}, What: fmt.Sprintf("%s's heap bytes per cached pod at %d pods", backend, pods), Get: func(s *Source) (Value, error) {
			b, err := s.heapPerObject(file, backend, pods)
			return F(b, 0), err
		}}
	}
	ratio := func(s *Source, pods int) (float64, error) {
		f, err := s.heapPerObject(file, "freshcache", pods)
		if err != nil {
			return 0, err
		}
		u, err := s.heapPerObject(file, "upstream", pods)
		return f / u, err
	}
	ratioFig := func(key string, pods int) Figure {
		return Figure{Key: key, From: []string{file}, What: fmt.Sprintf("heap per cached pod at %d pods, freshcache over upstream", pods), Get: func(s *Source) (Value, error) {
			r, err := ratio(s, pods)
			return F(r, 3), err
		}}
	}
	return []Figure{
		heap("memory-full.upstream.20k", "upstream", 20000),
		heap("memory-full.freshcache.20k", "freshcache", 20000),
		heap("memory-full.upstream.100k", "upstream", 100000),
		heap("memory-full.freshcache.100k", "freshcache", 100000),
		ratioFig("memory-full.fresh-vs-upstream.20k", 20000),
		ratioFig("memory-full.fresh-vs-upstream.100k", 100000),
		{Key: "memory-full.below-upstream-pct", From: []string{file}, What: "how much less heap per cached pod freshcache holds than upstream, %, at 20,000 and 100,000 pods", Get: func(s *Source) (Value, error) {
			var below []float64
			for _, pods := range []int{20000, 100000} {
				r, err := ratio(s, pods)
				if err != nil {
					return Value{}, err
				}
				below = append(below, 100*(1-r))
			}
			return Range(below, 1), nil
		}},
	}
}

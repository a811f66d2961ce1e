package figures

import (
	"slices"
	"strings"
	"sync"
)

// Figure is one figure the docs quote: how to compute it from the
// results. Its tolerance is its Value's: each number may differ from the
// exact figure by half a unit of the last digit the rendering prints
// (0.005 for "0.46"), counts, dates and hashes not at all.
type Figure struct {
	// Key is what a marked span names: "<file>.<what>", e.g.
	// "cluster.etcd-reads".
	Key string
	// From are the results files it reads (base names in ResultsDir);
	// the index lists a doc that marks the figure among each one's
	// citations.
	From []string
	// What says what the figure is, for listings and messages.
	What string
	// Get computes it.
	Get func(*Source) (Value, error)
}

var (
	allOnce sync.Once
	all     []Figure
)

// All is every figure, by key. The registry is built once; callers must
// not modify what it returns.
func All() []Figure {
	allOnce.Do(func() {
		for _, group := range [][]Figure{storageFigures(), clusterFigures(), scaleFigures(), lightFigures(), runFigures(), indexFigures()} {
			all = append(all, group...)
		}
		slices.SortFunc(all, func(a, b Figure) int { return strings.Compare(a.Key, b.Key) })
	})
	return all
}

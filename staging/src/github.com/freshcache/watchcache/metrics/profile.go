package metrics

import (
	"context"
	"runtime/pprof"
)

// Profile labels. Every goroutine freshcache starts carries the pprof label
// ProfileLabel with one of the Profile* values, and a reader carries
// ProfileWait for the length of its freshness wait, so that a CPU profile
// of an apiserver (or a benchmark) splits freshcache's cost by part through
// this contract rather than through function names that may change.
// Goroutines a labelled one starts inherit its label: the etcd3 store's
// watch goroutines, for instance, are counted with the reflector.
const (
	// ProfileLabel is the label's key.
	ProfileLabel = "freshcache"
	// ProfileWait is a reader's freshness wait (registering with the
	// driver, the Machine, the wait's metrics), on the reader's goroutine.
	ProfileWait = "wait"
	// ProfileFetch is the revision fetches, down through the etcd client.
	ProfileFetch = "fetch"
	// ProfileProgress is the progress requests sent on the cache's stream.
	ProfileProgress = "progress"
	// ProfileReflector is the list and watch ingestion (the state's single
	// writer) and the watch goroutines of the store under it.
	ProfileReflector = "reflector"
	// ProfileFanout is the watchers and the bookmark ticker.
	ProfileFanout = "fanout"
	// ProfileDriver is the freshness driver's timer goroutine.
	ProfileDriver = "driver"
	// ProfileConsistency is the inconsistency detector.
	ProfileConsistency = "consistency"
)

// Labeled runs f with the goroutine labelled part (one of the Profile*
// values); goroutines f starts inherit the label.
func Labeled(part string, f func()) {
	pprof.Do(context.Background(), pprof.Labels(ProfileLabel, part), func(context.Context) { f() })
}

// waitLabels is ProfileWait's label set, built once: a reader sets it at
// the start of every wait without allocating.
var waitLabels = pprof.WithLabels(context.Background(), pprof.Labels(ProfileLabel, ProfileWait))

// BeginWait labels the calling goroutine ProfileWait until the returned
// func restores the labels ctx carries (the request's, usually none).
func BeginWait(ctx context.Context) (end func()) {
	pprof.SetGoroutineLabels(waitLabels)
	return func() { pprof.SetGoroutineLabels(ctx) }
}

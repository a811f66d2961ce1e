package features

import (
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

const (
	// ConsistentReadsFromCache serves GET with resourceVersion="" from the
	// watch cache after the freshness wait, and starts WATCH with
	// resourceVersion="" from a snapshot at least as fresh as the request.
	// When off, GET rv="" goes to etcd and WATCH rv="" starts from whatever
	// the cache holds, or at etcd's current revision for a watch-list
	// (upstream behaviour). LIST rv="" is consistent from the cache either
	// way, as upstream's GA consistent list is.
	ConsistentReadsFromCache featuregate.Feature = "ConsistentReadsFromCache"

	// FreshResourceVersionZero makes LIST, GET and WATCH with
	// resourceVersion="0" reflect every write acknowledged
	// Options.ZeroReadStaleness (100 ms) before them, and every write of
	// the resource acknowledged through this apiserver before them. This
	// is legal because rv=0 means "any state", and such a state is one of
	// them. It closes kubernetes#59848 at component restart. Beta, on by
	// default; off gives back upstream's meaning of rv=0, "any state the
	// cache holds".
	FreshResourceVersionZero featuregate.Feature = "FreshResourceVersionZero"

	// CacheInconsistencyDetection runs, for every cached resource, a
	// periodic check that the cache holds exactly what etcd held at the
	// cache's revision (same keys, same resource versions), and purges and
	// relists the cache when it does not. It is freshcache's counterpart of
	// upstream's DetectCacheInconsistency, which upstream's cacher reads and
	// freshcache does not.
	CacheInconsistencyDetection featuregate.Feature = "CacheInconsistencyDetection"

	// RevisionsFromWrites lets the revision of a write that this
	// kube-apiserver sends to etcd answer the consistent reads that were
	// waiting for a revision fetch when the write was sent, and spares the
	// fetch when the write answers every one of them. A write sent after a
	// read arrived is committed after every write that completed before
	// it, so its revision is as good a bound as a fetch's. When off, every
	// revision comes from a fetch.
	RevisionsFromWrites featuregate.Feature = "RevisionsFromWrites"
)

// introducedIn is the Kubernetes minor version our gates are pinned to, so
// that they are visible at the default emulation version of kube-apiserver
// v1.37.
var introducedIn = version.MustParse("1.37")

// Specs returns the gate specifications, for servers that keep their own
// feature gate instead of DefaultMutableFeatureGate.
func Specs() map[featuregate.Feature]featuregate.VersionedSpecs {
	return map[featuregate.Feature]featuregate.VersionedSpecs{
		ConsistentReadsFromCache: {
			{Version: introducedIn, Default: true, PreRelease: featuregate.Beta},
		},
		FreshResourceVersionZero: {
			{Version: introducedIn, Default: true, PreRelease: featuregate.Beta},
		},
		CacheInconsistencyDetection: {
			{Version: introducedIn, Default: true, PreRelease: featuregate.Beta},
		},
		RevisionsFromWrites: {
			{Version: introducedIn, Default: true, PreRelease: featuregate.Beta},
		},
	}
}

func init() {
	runtime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(Specs()))
}

// Set is the value of every freshcache gate at one moment.
type Set struct {
	ConsistentReadsFromCache    bool
	FreshResourceVersionZero    bool
	CacheInconsistencyDetection bool
	RevisionsFromWrites         bool
}

// Current reads every freshcache gate from k8s.io/apiserver's default
// gate: the one place the gates are read. Call it when building a cache,
// never on a request path.
func Current() Set {
	g := utilfeature.DefaultFeatureGate
	return Set{
		ConsistentReadsFromCache:    g.Enabled(ConsistentReadsFromCache),
		FreshResourceVersionZero:    g.Enabled(FreshResourceVersionZero),
		CacheInconsistencyDetection: g.Enabled(CacheInconsistencyDetection),
		RevisionsFromWrites:         g.Enabled(RevisionsFromWrites),
	}
}

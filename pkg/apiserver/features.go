package apiserver

// The library registers its gates (ConsistentReadsFromCache,
// FreshResourceVersionZero, CacheInconsistencyDetection, RevisionsFromWrites)
// on k8s.io/apiserver's default feature gate when it is imported, so that
// kube-apiserver's --feature-gates accepts them.
import _ "github.com/freshcache/watchcache/features"

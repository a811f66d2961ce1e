// Package apiserver is the seam between the upstream kube-apiserver and the
// watch cache. It owns the --watch-cache-implementation flag and installs the
// chosen storage decorator wherever upstream would have put its own cacher:
// the kube APIs, apiextensions (the CRD getter included) and the aggregator.
//
// Which resources are cached stays upstream's decision. --watch-cache=false
// and --watch-cache-sizes=<resource>#0 make upstream pick
// generic.UndecoratedStorage; the getter returned by WrapGetter leaves those
// resources alone and swaps only decorators that would have been a cache.
//
// Callers: cmd/kube-apiserver, after app.NewConfig and before Complete.
package apiserver

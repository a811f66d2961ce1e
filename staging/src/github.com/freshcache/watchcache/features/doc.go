// Package features declares freshcache's feature gates and registers them on
// k8s.io/apiserver's DefaultMutableFeatureGate, so that `--feature-gates` on
// any server built on k8s.io/apiserver can switch them.
//
// Registration happens in init, as Kubernetes packages do. The gates are read
// exactly once, when a storage decorator is built (see the watchcache
// package's Options); nothing on a request path reads the global gate.
package features

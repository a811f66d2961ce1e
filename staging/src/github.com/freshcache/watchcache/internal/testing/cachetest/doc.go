// Package cachetest starts a real embedded etcd (through upstream's
// k8s.io/apiserver/pkg/storage/etcd3/testserver, which runs
// go.etcd.io/etcd/server/v3/embed), an etcd3 store of the example API's pods
// on it, and a freshcache Cache in front, for tests of this module.
//
// It also carries the example types and attribute functions that upstream's
// storage conformance suite (k8s.io/apiserver/pkg/storage/testing) expects.
// Everything it starts is stopped through t.Cleanup.
package cachetest

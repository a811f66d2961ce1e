// Package conformance runs upstream's storage conformance suite
// (k8s.io/apiserver/pkg/storage/testing) against freshcache on an embedded
// etcd. It has no non-test code; docs/conformance.md in the repository root
// lists every suite function and why any is left out.
package conformance

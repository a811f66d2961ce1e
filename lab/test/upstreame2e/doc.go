// Package upstreame2e runs upstream Kubernetes' own e2e tests (the
// e2e.test binary of k8s.io/kubernetes/test/e2e at v1.37.2, built without
// source changes by tools/e2esuite) against a local-up cluster, once per
// watch cache implementation, and compares the outcomes.
//
// tests.txt holds the selection: every test it runs, by full name, and
// every [sig-api-machinery] or [Conformance] test it leaves out, each with
// a one-line reason. TestUpstreamConformance checks the file against the
// binary (a name that matches no test, or more than one, fails), starts a
// fresh cluster (controller-manager, scheduler, hollow nodes) for each
// implementation, runs the selection with ginkgo in parallel, reads the
// junit report, and scrapes apiserver_freshcache_reads_total before and
// after to show that the cache served the reads.
//
// It runs only when FRESHCACHE_E2E_SUITE names the directory that holds
// e2e.test and ginkgo (make test-conformance, make test-e2e-conformance).
package upstreame2e

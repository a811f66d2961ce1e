// Package scrape reads a component's /metrics page (the Prometheus text
// exposition format) into samples keyed by name and labels as exposed, for
// tests that compare counters: the e2e, robustness and demo59848 tests of
// this module, against kube-apiserver and the hollow kubelet. It is the
// module's one such reader; it does no I/O.
package scrape

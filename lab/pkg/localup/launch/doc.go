// Package launch starts lab/cmd/local-up as a child process and waits for its
// machine-readable ready file (localup.ReadyFile): the one way the e2e
// tests, the robustness runs and the benchmarks start a local cluster.
// Nothing here reads local-up's human output, except to report it when
// local-up fails.
//
// By default the cluster is a bare control plane on free loopback ports
// (--nodes=0 --controllers=false); the caller's flags come after the
// defaults and override them, as in local-up's own parsing.
package launch

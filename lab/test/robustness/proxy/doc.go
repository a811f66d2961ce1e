// Package proxy is a loopback TCP proxy whose faults a robustness test
// controls: it can refuse and cut connections (from everyone, or from one
// etcd peer), stall them without closing (a blackhole), delay every chunk,
// and reset connections at random (drop).
//
// etcd members talk to each other over HTTP; the raft transport names the
// sending member in the X-Server-From header of the first request of every
// connection, and a connection carries one sender only. With SniffSender
// the proxy reads that header before it splices, so a fault can target one
// sender. Client traffic (gRPC over HTTP/2) must not be sniffed.
//
// All methods are safe for concurrent use.
//
// # Who calls it
//
// lab/test/robustness's cluster set-up puts one proxy in front of every etcd
// member's peer URL (sniffing the sender) and one in front of its client URL
// (for the caches), and its fault injector (faults.go) drives the faults.
// Nothing outside the robustness tests uses it.
package proxy

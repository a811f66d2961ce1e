// Package netpollfloor measures how long a round trip through a socket
// takes in a Go process whose cores are busy, next to the same round trip
// through channels.
//
// Every consistent read waits for one revision fetch from etcd, and in
// kube-apiserver that fetch crosses a socket. Go's scheduler learns that a
// socket is readable from the network poller, which a P consults only when
// it has no goroutine queued (findRunnable), from sysmon when nobody has
// polled for 10 ms, or from an idle GC worker. A goroutine blocked on a
// socket therefore stays blocked, after its data has arrived, until some P
// drains its run queue (golang/go#51651). A goroutine woken through a
// channel is made runnable at once, usually as the next to run.
//
// Measure reproduces the shape of the consistent-read target benchmark
// without the cache or etcd: Options.Busy goroutines each burn
// Options.Work of CPU, like a 100-pod LIST, then park on a shared gate that opens every
// Options.GatePeriod, like readers waiting for freshness. Meanwhile a probe
// alternates two round trips, one byte over a loopback TCP connection to
// an echo goroutine, and one message over a pair of channels to another
// echo goroutine. The difference between the two is what the network
// poller adds under that load; with Busy at zero it is a few microseconds.
//
// The result explains the floor under the fetch in
// docs/investigations/consistent-read-cost.md: the revision fetch's p50 of 0.7 ms at 32 clients on two
// cores, against 0.2 ms at one client and 0.18 ms with etcd's in-process
// client, which has no socket.
package netpollfloor

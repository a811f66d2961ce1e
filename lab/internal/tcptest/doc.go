// Package tcptest gives tests loopback TCP listeners that the test itself
// owns: one held open so that a port is busy, one that serves each
// connection with a handler, and an address where nothing listens.
//
// # Who calls it
//
// Tests only (it imports testing): localup's forwarder tests, the
// robustness proxy's, etcdlocal's and the e2e tests' port checks.
//
// # What it guarantees
//
// Every listener is on 127.0.0.1 with a port the kernel chose, and is
// closed by t.Cleanup when the test ends, which also ends Serve's accept
// loop. A failure to listen fails the test at once.
package tcptest

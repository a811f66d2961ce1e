// Package etcdload writes the benchmarks' data sets straight to etcd,
// encoded as kube-apiserver stores them: through kube-apiserver's own
// storage factory (protobuf for core objects), at the key kube-apiserver
// would use (Prefix/resource/namespace/name). Loading tens of thousands of
// objects this way takes seconds, and the writes' cost stays off the
// apiserver under test, which pays only for the watch events.
//
// A Writer encodes and writes one object (Put); Load writes a whole data
// set with concurrent writers; Update is a steady background load of
// updates at a fixed rate. The callers say what object i is: this package
// knows keys and encodings, not data sets. ConfigMap is the one object
// shape the configmap scenarios (kep-2340, stall, watchlist) share: their
// names, labels and data, with the fixed metadata around them.
//
// # Who calls it
//
// The storage benchmark (package storage: its Env and background writers,
// which the apiserver benchmark shares) and the kep-2340, stall and
// watchlist scenarios.
//
// # What it guarantees
//
//   - What Put writes is what kube-apiserver would have written for the
//     object: a kube-apiserver started on that etcd serves it.
//   - Load calls put for every index once; the first error stops it.
//   - Update makes one call at a time, so that a call etcd holds up (a
//     stalled etcd) holds the next ones back instead of piling them up;
//     the same seed picks the same indexes.
//   - It logs nothing: the etcd client's log is discarded, which would
//     otherwise show every Put cut by a cancelled context or a stall.
//   - Its errors name the object, not this package: callers add their own
//     prefix.
package etcdload

// Package store holds the cache's state: every object of one resource, keyed
// by storage key in a github.com/google/btree, plus optional secondary
// indexes (for example pods by spec.nodeName).
//
// # Who calls it
//
// The reflector goroutine is the only writer: it calls Writer.Apply for each
// watch event and Writer.Reset after a relist. Every other caller holds an
// immutable Snapshot obtained from Writer.Snapshot.
//
// # Guarantees
//
//   - A Snapshot never changes after it is taken. Taking one is O(1): the
//     trees are cloned lazily (copy-on-write), so readers that filter, sort or
//     encode a snapshot never block the writer and never hold a lock.
//   - Snapshot.RV() is the revision of the last change applied before it was
//     taken (or of the list it was built from).
//   - Index entries always match the objects in the same snapshot. The
//     invariants build tag enables a check of this after every write.
//   - Ranges are half-open: [from, to).
//
// Writer is not safe for concurrent use; Snapshot is.
package store

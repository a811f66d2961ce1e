// Package misplaced remembers the keys at which the cache and etcd
// disagree because an object was written through the cache at a key that
// is not its KeyFunc key (upstream's RunTestKeySchema writes such keys;
// the registry never does).
//
// # Who calls it
//
// The root package's Cache holds one Keys: its writes Add the written key
// and the KeyFunc key of such an object, and GetList and Get ask Touches
// and TouchesKey before planning a read, so that internal/plan sends a read
// touching one of them to etcd.
//
// # What it guarantees
//
// A key once added is reported by every later Touches over a range that
// holds it, and keys are never forgotten. Past MaxKeys every range touches:
// reads are still correct, only all answered by etcd. Keys is safe for
// concurrent use; when nothing was ever added, Touches costs one atomic
// load and takes no lock.
package misplaced

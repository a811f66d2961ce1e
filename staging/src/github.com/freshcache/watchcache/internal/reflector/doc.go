// Package reflector feeds the cache from etcd: a paged list, then a watch
// from the list's revision, with progress notifications. Its goroutine is the
// only writer of the cache's state: it calls the Sink, and nothing else does.
//
// # How it talks to etcd
//
// It uses the underlying storage.Interface (upstream's etcd3 store) rather
// than a raw clientv3 client. That store already owns decoding, the value
// transformer (encryption at rest) and the key layout, which the cache must
// match exactly, and its Watch turns etcd progress notifications into
// Bookmark events when ListOptions.ProgressNotify is set. The reflector
// attaches gRPC outgoing metadata (Config.Metadata, by default
// source=freshcache) to the watch context. clientv3 multiplexes watches with
// identical metadata onto one gRPC Watch stream, so
//
//   - every freshcache watch of one etcd client shares one stream, which
//     client watches that bypass the cache cannot starve; and
//   - RequestProgress, sent with the same metadata, reaches exactly that
//     stream. etcd answers a progress request only once every watch on the
//     stream is synced, so one request covers every cached resource.
//   - etcd also withholds the answer while any watch on the stream starts
//     beyond its current revision (etcd-io/etcd#20229). So a watch starts
//     at the sink's revision itself, not the one after it as the store's
//     "from" would: a quiet resource that has just listed at etcd's
//     revision would otherwise hold back every cache's progress
//     notification until the next write anywhere. The re-delivered events
//     of that revision are applied already and are skipped.
//
// The etcd3 store adds clientv3.WithRequireLeader to that context, so a
// member that loses the leader ends the watch instead of silently serving a
// stale stream.
//
// # Own writes
//
// The etcd3 store writes one key per etcd transaction (Create,
// GuaranteedUpdate and Delete each send a single-key txn), so a revision
// the apiserver's own store wrote holds exactly one event. The cache tells
// the reflector when it sends such a write and, once it is answered, the
// revision etcd committed it at (WriteSending, WriteEnded). When the watch
// holds one event at such a revision, the revision is whole: it goes to
// the sink at once, with no progress round trip. etcd sends a write's
// answer and its watch event together, so either may come first; while a
// write of the cache's is in flight, a held single event waits up to
// OwnWriteGrace for its answer before RevisionPending asks for progress,
// and a late answer still completes it. A revision of two or more events,
// or of anybody else's write (another apiserver, an etcd client), waits
// for a later event or a progress notification as before.
//
// # Guarantees
//
//   - Whole transactions: etcd gives every key of one transaction the same
//     revision (a lease expiring, a delete by prefix). The etcd3 store
//     hands events over one by one, so the reflector holds the events of a
//     revision and hands them over in one Apply once a later event, a
//     progress notification at or beyond it, or the cache's own write of
//     it (Own writes) proves the revision complete; while it waits it
//     calls Config.RevisionPending, so that a progress request is sent at
//     once. A watch that ends inside a revision drops the part it holds;
//     the next watch, from the sink's revision, delivers the revision
//     again.
//   - Untrusted progress (Config.UntrustedProgress, an etcd the version
//     guard rejected): bookmarks are ignored, and events go over one at a
//     time, as upstream's cacher applies them; a watch that ends inside a
//     revision resumes from the revision before it and skips the keys it
//     applied already.
//   - Never back in time: a relist whose revision is below what the cache
//     already holds is discarded and retried; events and progress
//     notifications at or below what the reflector received itself (the
//     list, events it applied, notifications) are ignored.
//   - Never past an event silently: the cache's catch-up on the ledger of
//     own writes moves the sink's revision from outside the reflector, on
//     the proof that every revision in between was a single-key write of
//     another resource. An event above what the reflector received but at
//     or below the sink's revision shows that proof wrong (etcd restored
//     under a running apiserver, a store writing several keys per
//     transaction): the reflector relists (ErrMovedPastEvent, reason
//     metrics.RelistMovedPastEvent) rather than skip it (received.go).
//   - Transient watch errors (etcd without a leader, overloaded or
//     unreachable: an internal error whose cause is etcd's or gRPC's, 429,
//     503, timeouts; and a transformer whose KMS plugin cannot be reached)
//     are retried on the same history, from the sink's revision, for up
//     to TransientRetry (30 s, as upstream's cacher) without progress;
//     only then, after a compaction (410), after a value that cannot be
//     decoded or transformed for any other reason, or after a failed
//     apply does it relist. Progress is an event applied or a notification
//     beyond the sink's revision, never the re-delivered events of the
//     revision a watch started at. Before a relist it calls Sink.Unready,
//     and every Replace names its reason.
//   - A decode or transform error relists at once, unless the transformer
//     failed on a remote call with a transient gRPC code (Unavailable,
//     DeadlineExceeded, ResourceExhausted: a KMS plugin down or slow),
//     which a relist could not get past either: that one is retried as
//     above, as upstream does. Upstream's client-go reflector cannot tell
//     any of them from a lost leader (the etcd3 store sends all as an
//     internal error) and re-watches for 30 s; a corrupt value fails the
//     same event each time, and meanwhile its cache stays ready but
//     frozen.
//   - A watch that just ends is resumed from the current revision.
//   - Run returns when stop is closed, after the in-flight call to etcd
//     returns (its context is cancelled).
package reflector

// Package checker validates a recorded robustness run (package record)
// against etcd's own history of the key space. Every checker reports
// violations; none of them needs wall-clock assertions.
//
// The checkers and what they promise to catch:
//
//   - linearizability: writes and consistent reads, checked with porcupine
//     over a per-key model of the key space (LISTs are projected onto each
//     key). Writes whose outcome the client never learned are resolved from
//     etcd's history: applied (with the revision etcd gave them) or dropped.
//     A real kube-apiserver's pod deletion (a marking, then the delete) is
//     one DELETE, and an update it answered by finishing the deletion of a
//     marked pod is that deletion (completedDeletions). A DELETE whose
//     deletion such an update finished first made only the marking
//     (lostRaceToUpdate), and a DELETE of a version already marked wrote
//     nothing: it is the read kube-apiserver answered it from.
//   - fresh-list: a consistent LIST's RV covers every write acknowledged
//     before the LIST was called (the cross-key half of linearizability).
//   - matches-etcd: every read (any resourceVersion) returns exactly etcd's
//     state at the RV it reports; NotOlderThan reads are not older than N.
//   - watch-ordered, watch-unique, watch-atomic, watch-bookmarkable,
//     watch-reliable, watch-resumable, watch-matches-etcd: the watch
//     guarantees as etcd's robustness suite defines them, checked per
//     watcher chain against etcd's history.
//   - time-travel: per client, across caches, no read returns an RV older
//     than one the client observed before, nor an object version that was
//     already replaced at a revision the client observed. An rv=0 read
//     under a staleness bound is judged against what the client had
//     observed by its call minus the bound.
//   - nothing-lost: every acknowledged write is in etcd's history as
//     acknowledged; no write reported as failed was applied; etcd's history
//     itself has no gaps (else the run proves nothing).
//
// # Who calls it
//
// lab/test/robustness's run, through Check, once the run has ended and etcd's
// history has been read back. The checkers only read the recorded history;
// they never touch a live cluster.
package checker

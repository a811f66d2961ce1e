// Package history keeps the recent events of one resource, each with the
// state snapshot right after it, so that the cache can serve
//
//   - WATCH from a resource version N: every event with revision > N;
//   - LIST with ResourceVersionMatch=Exact, and continue tokens: the state at
//     exactly revision N.
//
// The window is bounded twice: by age (Options.Window, 75s by default, like
// upstream's EventsHistoryWindow) and by count (Options.Capacity). Evicting an
// event moves the window's base forward; a request for a revision below the
// base gets ErrExpired, which the cache turns into 410 Expired or delegates
// to etcd, as upstream does.
//
// # Who calls it
//
// The reflector goroutine calls Reset and Append (one writer). Any goroutine
// may call Since, SnapshotAt and the other readers concurrently.
//
// # Guarantees
//
//   - Event revisions strictly increase; Append refuses an event that does not.
//   - Every event with revision in (Base(), Last()] is present, in order.
//   - SnapshotAt(rv) for Base() <= rv <= Last() is the exact state at rv.
package history

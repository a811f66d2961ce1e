// Package fanout delivers the cache's events to its watchers.
//
// # Who calls it
//
// The watchcache package registers a watcher with Add while it holds the
// cache's state lock, so that the watcher's initial state (a snapshot and/or
// a backlog of history events, up to Spec.StartRV) and the events dispatched
// afterwards (revision > StartRV) neither overlap nor leave a gap. The
// reflector goroutine, under the same state lock, calls Dispatch for every
// event and Progress for every progress notification. Run drives bookmarks.
//
// # Guarantees
//
//   - Dispatch never blocks on a watcher. Each watcher has a bounded queue;
//     a watcher whose queue overflows is terminated (its result channel is
//     closed, the client re-watches) and counted in
//     apiserver_freshcache_terminated_watchers_total{reason="slow"}.
//   - Each watcher has one goroutine that selects (key prefix, labels,
//     fields), converts and sends; selection work is therefore spread over
//     watchers and never done under a shared lock. Watchers whose selector
//     pins the trigger index (e.g. spec.nodeName=n1) are only handed events
//     whose object, old or new, has that value.
//   - A watcher sees revisions in increasing order; bookmarks never go back.
//     With Spec.InitialEventsEnd, the initial state is followed by a bookmark
//     at StartRV annotated k8s.io/initial-events-end, as for sendInitialEvents.
//   - Objects leave the cache as a *Shared (see shared.go), never as the
//     cached object itself and without a deep copy: one Shared per
//     dispatched event is handed to every watcher that gets it, and it
//     implements runtime.CacheableObject, so the apiserver encodes an event
//     once per encoding rather than once per watcher (as upstream's
//     cachingObject does). Writes through it copy first, so no consumer can
//     corrupt the cache; a consumer that wants to mutate freely calls
//     GetObject for a private copy, since a Shared's own setters are seen by
//     the other watchers of the same event.
//   - Stop, a cancelled context, Terminate and TerminateAll all end the
//     watcher's goroutine; none leaks.
//
// Lock order: the cache's state lock, then Fanout.mu, then Watcher.mu.
package fanout

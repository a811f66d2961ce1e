// Package listing is the part of a LIST that needs no cache: parsing and
// validating the request, the key range it covers, and filling the
// answer (selection, paging, continue token, list metadata) from an
// immutable store.Snapshot.
//
// # Who calls it
//
// The root package's Cache.GetList: Parse first (client mistakes come back
// as BadRequest), Request.Plan for internal/plan, then, wherever the plan
// sends the read, Lister.FromSnapshot for a snapshot, Cost for the
// fallback budget (internal/freshread) and Quorum for an rv=0 LIST sent
// to etcd.
//
// # What it guarantees
//
// Parse never panics and keeps the key (and a continue key) inside the
// resource's prefix; the fuzz tests hold it to that. Ranges are half-open,
// [Key, End). FromSnapshot reads only the snapshot it is given, takes no
// lock and does no I/O, so readers never block the cache's writer; the
// items it returns are shallow copies of the cached objects, whose nested
// data the caller must treat as read-only. An rv=0 LIST is answered in
// one piece whatever its limit, as upstream's cacher answers it.
package listing

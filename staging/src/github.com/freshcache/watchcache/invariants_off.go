//go:build !invariants

package watchcache

import "github.com/freshcache/watchcache/store"

// checkInvariants is compiled in only with the invariants build tag.
func checkInvariants(*Cache, *store.Snapshot) {}

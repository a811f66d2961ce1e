//go:build !invariants

package watchcache

import "github.com/freshcache/watchcache/internal/store"

// checkInvariants is compiled in only with the invariants build tag.
func checkInvariants(*Cache, *store.Snapshot) {}

// invariantsEnabled: built with the invariants tag.
const invariantsEnabled = false

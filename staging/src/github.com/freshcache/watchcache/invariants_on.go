//go:build invariants

package watchcache

import (
	"fmt"

	"github.com/freshcache/watchcache/internal/store"
)

// checkInvariants runs after every publication, under the state lock:
//   - the cache revision never decreases;
//   - a published snapshot is never ahead of the writer;
//   - the history is monotonic and ends at or below the cache revision;
//   - indexes agree with the objects (O(n): invariants builds only).
func checkInvariants(c *Cache, snap *store.Snapshot) {
	if snap.RV() < c.mu.writer.RV() {
		panic(fmt.Sprintf("watchcache invariant: published snapshot at %d behind writer at %d", snap.RV(), c.mu.writer.RV()))
	}
	if last := c.history.Last(); last > snap.RV() {
		panic(fmt.Sprintf("watchcache invariant: history at %d ahead of cache revision %d", last, snap.RV()))
	}
	if c.history.Base() > snap.RV() {
		panic(fmt.Sprintf("watchcache invariant: history base %d ahead of cache revision %d", c.history.Base(), snap.RV()))
	}
	if prev := c.lastPublished; snap.RV() < prev {
		panic(fmt.Sprintf("watchcache invariant: cache revision went back from %d to %d", prev, snap.RV()))
	}
	c.lastPublished = snap.RV()
	if err := snap.CheckIndexes(c.indexFuncs); err != nil {
		panic(fmt.Sprintf("watchcache invariant: %v", err))
	}
	if err := c.history.CheckMonotonic(); err != nil {
		panic(fmt.Sprintf("watchcache invariant: %v", err))
	}
}

// invariantsEnabled: built with the invariants tag.
const invariantsEnabled = true

package consistency

import (
	"fmt"
	"iter"
)

// Diff is the first key, in key order, at which the cache and etcd
// disagree. An RV of 0 says that side does not hold the key (etcd never
// gives a stored object revision 0).
type Diff struct {
	Key     string
	CacheRV uint64
	EtcdRV  uint64
}

// String renders the difference for a log line.
func (d Diff) String() string {
	switch {
	case d.CacheRV == 0:
		return fmt.Sprintf("%s: only in etcd (rv %d)", d.Key, d.EtcdRV)
	case d.EtcdRV == 0:
		return fmt.Sprintf("%s: only in the cache (rv %d)", d.Key, d.CacheRV)
	}
	return fmt.Sprintf("%s: rv %d in the cache, %d in etcd", d.Key, d.CacheRV, d.EtcdRV)
}

// Comparison walks the cache's items in lock-step with etcd's, both in key
// order, as etcd's pages arrive. It holds no copy of either side: the
// cache's items are pulled from their sequence one at a time, and etcd's
// are dropped once compared. The verdict is exact (it does not rest on the
// hashes); the digests summarise each side for the log.
//
// A Comparison is used by one goroutine. Call Finish, or Close if the
// comparison is abandoned, to release the cache's sequence.
type Comparison struct {
	next  func() (Item, bool)
	stop  func()
	cache *Digester
	etcd  *Digester
	// head is the cache's next item not yet compared, if have is set.
	head  Item
	have  bool
	first *Diff
	err   error
}

// Compare starts a comparison against cache, the cache's items in key
// order.
func Compare(cache iter.Seq[Item]) *Comparison {
	next, stop := iter.Pull(cache)
	c := &Comparison{next: next, stop: stop, cache: NewDigester(), etcd: NewDigester()}
	c.pull()
	return c
}

// pull makes head the cache's next item, adding it to the cache's digest.
func (c *Comparison) pull() {
	c.head, c.have = c.next()
	if c.have {
		if err := c.cache.Add(c.head); err != nil && c.err == nil {
			c.err = err
		}
	}
}

func (c *Comparison) differ(d Diff) {
	if c.first == nil {
		c.first = &d
	}
}

// Add compares etcd's next item. It fails when etcd's items are not in
// ascending key order, or the cache's are not; the comparison is then void.
func (c *Comparison) Add(e Item) error {
	if c.err != nil {
		return c.err
	}
	if err := c.etcd.Add(e); err != nil {
		c.err = err
		return err
	}
	// The cache's keys before e's are missing in etcd.
	for c.have && c.head.Key < e.Key {
		c.differ(Diff{Key: c.head.Key, CacheRV: c.head.RV})
		c.pull()
	}
	if c.have && c.head.Key == e.Key {
		if c.head.RV != e.RV {
			c.differ(Diff{Key: e.Key, CacheRV: c.head.RV, EtcdRV: e.RV})
		}
		c.pull()
	} else {
		c.differ(Diff{Key: e.Key, EtcdRV: e.RV})
	}
	return c.err
}

// Outcome of a finished comparison.
type Outcome struct {
	// Cache and Etcd are the digests of each side.
	Cache, Etcd Digest
	// First is the first difference, nil when both sides hold the same
	// items.
	First *Diff
}

// Finish compares the cache's remaining items with the end of etcd's and
// releases the cache's sequence.
func (c *Comparison) Finish() (Outcome, error) {
	defer c.Close()
	for c.err == nil && c.have {
		c.differ(Diff{Key: c.head.Key, CacheRV: c.head.RV})
		c.pull()
	}
	if c.err != nil {
		return Outcome{}, c.err
	}
	return Outcome{Cache: c.cache.Digest(), Etcd: c.etcd.Digest(), First: c.first}, nil
}

// Close releases the cache's sequence. It is idempotent.
func (c *Comparison) Close() { c.stop() }

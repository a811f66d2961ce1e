package misplaced

import (
	"slices"
	"sync"
	"sync/atomic"
)

// MaxKeys bounds the keys a Keys remembers one by one.
// Past it, every read is answered by etcd: still correct, and a caller
// that writes that many objects at keys that are not theirs is not an
// apiserver.
const MaxKeys = 1024

// Keys remembers the keys at which the cache and etcd disagree
// because an object was written through the cache at a key that is not
// its KeyFunc key. The cache indexes objects by KeyFunc, as upstream's
// does, so it holds such an object at the other key (where etcd has
// nothing, or something else), or nowhere when KeyFunc fails on it.
// Reads that touch either key are answered by etcd, which stores by the
// key the write named.
//
// The registry never writes such keys (its key is made from the object's
// own namespace and name); storage-level callers can, as upstream's
// RunTestKeySchema does. Only writes through this cache are seen: a key
// written directly to etcd, or through another apiserver's storage, is
// not, as it is not by upstream's cacher for the reads it answers.
//
// It is safe for concurrent use. Keys are never forgotten: a deleted
// misplaced key only costs etcd reads of that key.
type Keys struct {
	// n is the number of keys remembered (MaxKeys+1 once it
	// overflowed). It is read without the lock, so that the usual case,
	// nothing misplaced, costs one atomic load per read.
	n  atomic.Int64
	mu struct {
		sync.RWMutex
		// keys are sorted and unique.
		keys []string
		// overflow: more than MaxKeys were added; every range
		// touches.
		overflow bool
	}
}

// Add remembers keys.
func (m *Keys) Add(keys ...string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.mu.overflow {
		return
	}
	for _, k := range keys {
		i, found := slices.BinarySearch(m.mu.keys, k)
		if !found {
			m.mu.keys = slices.Insert(m.mu.keys, i, k)
		}
	}
	if len(m.mu.keys) > MaxKeys {
		m.mu.overflow, m.mu.keys = true, nil
		m.n.Store(MaxKeys + 1)
		return
	}
	m.n.Store(int64(len(m.mu.keys)))
}

// Touches reports whether a remembered key lies in [from, to); to == ""
// means no upper bound.
func (m *Keys) Touches(from, to string) bool {
	if m.n.Load() == 0 {
		return false
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.mu.overflow {
		return true
	}
	i, _ := slices.BinarySearch(m.mu.keys, from)
	return i < len(m.mu.keys) && (to == "" || m.mu.keys[i] < to)
}

// TouchesKey reports whether key itself is remembered.
func (m *Keys) TouchesKey(key string) bool {
	return m.Touches(key, key+"\x00")
}

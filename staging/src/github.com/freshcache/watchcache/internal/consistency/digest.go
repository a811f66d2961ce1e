package consistency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"iter"

	"github.com/freshcache/watchcache/internal/store"
)

// ErrUnordered is returned when items do not come in strictly ascending key
// order. Both sides of a comparison must be in that order (the cache's
// btree and etcd's range both are); a digest over another order would not
// be comparable.
var ErrUnordered = errors.New("watchcache/consistency: items not in ascending key order")

// Item is what the detector compares of one object: its storage key and
// the etcd revision that last modified it. Two states with the same items
// hold the same versions of the same objects.
type Item struct {
	Key string
	RV  uint64
}

// Digest summarises a sequence of items: how many, and an FNV-64a hash of
// their encoding. It is what the log line shows of each side.
type Digest struct {
	Count int
	Hash  uint64
}

// String renders a digest as "<hash>/<count>".
func (d Digest) String() string { return fmt.Sprintf("%016x/%d", d.Hash, d.Count) }

// Digester computes a Digest incrementally. Items must be added in strictly
// ascending key order. The zero value is not ready; use NewDigester.
//
// Each item is hashed as uvarint(len(key)) || key || RV (8 bytes, big
// endian): the length prefix makes the encoding of a sequence unambiguous,
// so that ("a", 12) and ("a1", 2) cannot collide by construction.
type Digester struct {
	h    hash.Hash64
	n    int
	last string
	err  error
	// buf is reused for every item's encoding, so that Add allocates
	// nothing once it has grown to the longest key.
	buf []byte
}

// NewDigester returns a Digester of the empty sequence.
func NewDigester() *Digester { return &Digester{h: fnv.New64a()} }

// Add appends it. After an error every later Add returns the same error.
func (d *Digester) Add(it Item) error {
	if d.err != nil {
		return d.err
	}
	if d.n > 0 && it.Key <= d.last {
		d.err = fmt.Errorf("%w: %q after %q", ErrUnordered, it.Key, d.last)
		return d.err
	}
	d.buf = binary.AppendUvarint(d.buf[:0], uint64(len(it.Key)))
	d.buf = append(d.buf, it.Key...)
	d.buf = binary.BigEndian.AppendUint64(d.buf, it.RV)
	_, _ = d.h.Write(d.buf) // a hash.Hash's Write never fails
	d.n++
	d.last = it.Key
	return nil
}

// Digest is the digest of the items added so far.
func (d *Digester) Digest() Digest { return Digest{Count: d.n, Hash: d.h.Sum64()} }

// Of returns the digest of items.
func Of(items iter.Seq[Item]) (Digest, error) {
	d := NewDigester()
	for it := range items {
		if err := d.Add(it); err != nil {
			return Digest{}, err
		}
	}
	return d.Digest(), nil
}

// SnapshotItems yields every object of snap as an Item, in key order. The
// snapshot is immutable, so this may run on any goroutine, for as long as
// it takes, without holding the cache's locks.
func SnapshotItems(snap *store.Snapshot) iter.Seq[Item] {
	return func(yield func(Item) bool) {
		snap.Range("", "", func(o *store.Object) bool {
			return yield(Item{Key: o.Key, RV: o.RV})
		})
	}
}

package oracle

import (
	"strings"
	"sync"
)

// LedgerSpan is how many of the latest revisions a Ledger remembers. A
// cache proves itself current only over a span of revisions no longer than
// this: a read's revision is a few writes ahead of the cache, not
// thousands.
const LedgerSpan = 4096

// A Ledger records the revisions of this process's own writes to one etcd
// cluster, and the one key each wrote. The etcd3 store writes one key per
// transaction, so a revision one of its writes committed changed that key
// and nothing else. A cache whose state is at revision from, and which
// needs to be at to, is there already when every revision in (from, to] is
// in the ledger with a key outside the cache's prefix: no event of its own
// can lie between. Then the cache may advance to to without asking etcd for
// a progress notification (Prove).
//
// Every cache of the cluster shares the Oracle's Ledger, so the writes of
// one resource let every other resource's cache advance. A revision the
// ledger lacks (another apiserver's write, a lease expiry, the compactor's
// own transaction, a write whose answer was lost) proves nothing: the
// cache asks etcd as before.
//
// A nil *Ledger records nothing and proves nothing. Safe for concurrent
// use; mu is a leaf lock.
type Ledger struct {
	mu struct {
		sync.Mutex
		// ring[rev%LedgerSpan] is the latest write recorded at a revision
		// with that remainder; allocated on the first write.
		ring []ledgerEntry
		// inflight counts the writes sent (Sending) and not yet ended by
		// their floor: the newest revision recorded when each was sent.
		// etcd commits such a write above its floor, so it can fill no
		// revision at or below it.
		inflight map[int64]int
		// ninflight is the sum of inflight's counts.
		ninflight int
		// top is the newest revision recorded.
		top int64
		// changed is closed, and replaced, when a write ends.
		changed chan struct{}
		// fault breaks Prove on purpose, for the negative controls of the
		// history checks; only builds with the invariants tag can set it
		// (ledger_fault.go).
		fault LedgerFault
	}
}

// LedgerFault is a way to break a Ledger on purpose (ledger_fault.go).
type LedgerFault uint8

const (
	// NoFault is a Ledger that works.
	NoFault LedgerFault = iota
	// FaultIgnorePrefix takes a write of a key under the prefix for one
	// of another resource.
	FaultIgnorePrefix
	// FaultIgnoreGaps takes a revision the ledger lacks for one of
	// another resource's write.
	FaultIgnoreGaps
)

type ledgerEntry struct {
	rev int64
	key string
}

// Proof is what a Ledger can say about a span of revisions.
type Proof uint8

const (
	// Unproven means a revision of the span is none of this process's writes
	// that the ledger knows of, and no write in flight can fill it, or the
	// span is longer than LedgerSpan.
	Unproven Proof = iota
	// Proven means every revision of the span is a write of this process to a
	// key outside the prefix.
	Proven
	// Pending means not proven yet, but it may soon be. Either writes of this
	// process are in flight that etcd may yet commit at every revision the
	// ledger lacks (each above the newest revision recorded when it was
	// sent, so a gap below every write in flight is Unproven at once), or
	// a revision of the span is this process's write of a key under the
	// prefix, whose event the cache has yet to apply (after which the span
	// starts past it). Ask again when the ledger changes (Changed) or the
	// cache applies an event.
	Pending
)

// NewLedger returns an empty Ledger. Every Oracle has one (Oracle.Ledger).
func NewLedger() *Ledger { return &Ledger{} }

// Sent is a write Sending announced, for its Ended.
type Sent struct {
	// floor is the newest revision the ledger held when the write was
	// sent; -1 for a nil Ledger's.
	floor int64
}

// Sending announces a write of one key, in a transaction of its own, that
// is about to be sent to etcd. End every Sending with one Ended.
func (l *Ledger) Sending() Sent {
	if l == nil {
		return Sent{floor: -1}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.inflight == nil {
		l.mu.inflight = map[int64]int{}
	}
	s := Sent{floor: l.mu.top}
	l.mu.inflight[s.floor]++
	l.mu.ninflight++
	return s
}

// Ended ends the write s: rev is the revision etcd committed it at and key
// the etcd key it wrote, or rev is 0 when nothing was written (refused,
// failed, withdrawn) or when the revision or the key is unknown.
func (l *Ledger) Ended(s Sent, rev int64, key string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if rev > 0 {
		l.mu.top = max(l.mu.top, rev)
	}
	if rev > 0 && key != "" {
		if l.mu.ring == nil {
			l.mu.ring = make([]ledgerEntry, LedgerSpan)
		}
		e := &l.mu.ring[rev%LedgerSpan]
		if rev > e.rev {
			*e = ledgerEntry{rev: rev, key: key}
		}
	}
	if l.mu.inflight[s.floor] > 0 {
		l.mu.inflight[s.floor]--
		if l.mu.inflight[s.floor] == 0 {
			delete(l.mu.inflight, s.floor)
		}
		l.mu.ninflight--
	}
	if l.mu.changed != nil {
		close(l.mu.changed)
		l.mu.changed = nil
	}
	l.mu.Unlock()
}

// Changed returns a channel that is closed when the next write ends. Take
// it before Prove, so that no change between the two goes unseen.
func (l *Ledger) Changed() <-chan struct{} {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.changed == nil {
		l.mu.changed = make(chan struct{})
	}
	return l.mu.changed
}

// Prove reports whether every revision in (from, to] is a write of this
// process to a key that does not start with prefix (an etcd key prefix,
// ending in "/"). An empty span is Proven.
func (l *Ledger) Prove(prefix string, from, to int64) Proof {
	if l == nil {
		return Unproven
	}
	if to <= from {
		return Proven
	}
	if to-from > LedgerSpan {
		return Unproven
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// missing holds the revisions the ledger lacks, ascending, up to one
	// more than the writes in flight could fill.
	var missing []int64
	own := false
	for rev := from + 1; rev <= to; rev++ {
		var e ledgerEntry
		if l.mu.ring != nil {
			e = l.mu.ring[rev%LedgerSpan]
		}
		switch {
		case e.rev != rev:
			if l.mu.fault != FaultIgnoreGaps {
				missing = append(missing, rev)
				if len(missing) > l.mu.ninflight {
					return Unproven
				}
			}
		case strings.HasPrefix(e.key, prefix):
			own = l.mu.fault != FaultIgnorePrefix
		}
	}
	if len(missing) == 0 {
		if own {
			return Pending
		}
		return Proven
	}
	if !l.fillableLocked(missing) {
		return Unproven
	}
	return Pending
}

// fillableLocked reports whether the writes in flight can fill every
// revision of missing (ascending), each write one revision above its
// floor. The writes that can fill a revision include those that can fill
// any lower one, so they can fill all of missing exactly when, for every
// k, at least k of them can fill the k-th.
func (l *Ledger) fillableLocked(missing []int64) bool {
	for k, rev := range missing {
		n := 0
		for floor, count := range l.mu.inflight {
			if floor < rev {
				n += count
			}
		}
		if n < k+1 {
			return false
		}
	}
	return true
}

package oracle

// Recent revisions: the answers of requests sent a short while ago, for
// reads that may be that much behind (resourceVersion=0 reads; doc.go,
// "Bounded reads").

import (
	"sync"
	"time"
)

// recentCapacity is how many answered requests the Oracle remembers. A
// bounded read needs one sent within its bound; at the fetch and write
// rates of a busy apiserver (hundreds a second) 64 answers span far more
// than any sensible bound, and a scan of 64 entries costs less than one
// channel operation.
const recentCapacity = 64

// answer is one answered request: every write that completed before sent
// has a revision <= rev (a linearizable fetch sent then, or a write of
// this process sent then and committed at rev).
type answer struct {
	sent time.Time
	rev  int64
}

// recentAnswers is a ring of the latest answers, in the order they were
// answered. Its own lock: it is written once per fetch or write and read
// once per bounded read, and neither should wait for Oracle.mu, which
// every joining caller takes.
type recentAnswers struct {
	mu   sync.Mutex // guards ring, next, n
	ring [recentCapacity]answer
	next int // where the next answer goes
	n    int // how many slots hold an answer
}

func (r *recentAnswers) add(sent time.Time, rev int64) {
	if rev <= 0 {
		return
	}
	r.mu.Lock()
	r.ring[r.next] = answer{sent: sent, rev: rev}
	r.next = (r.next + 1) % recentCapacity
	r.n = min(r.n+1, recentCapacity)
	r.mu.Unlock()
}

// lowest returns the lowest revision among the answers to requests sent at
// or after since: the least a bounded read arriving at since+bound must
// wait for. Any of them bounds the read; the lowest is the one a cache has
// most likely reached already.
func (r *recentAnswers) lowest(since time.Time) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best int64
	for i := range r.n {
		a := r.ring[i]
		if a.sent.Before(since) {
			continue
		}
		if best == 0 || a.rev < best {
			best = a.rev
		}
	}
	return best, best > 0
}

// RecentRevision returns a revision R from a fetch or a write of this
// process that was sent at most maxAge before the call and has been
// answered; so every write that completed more than maxAge before the call
// has a revision <= R. Of several it returns the lowest. It never sends a
// request and never blocks on one: false means none was answered in time,
// and the caller falls back to Revision. A maxAge <= 0 always gives false.
func (o *Oracle) RecentRevision(maxAge time.Duration) (int64, bool) {
	if maxAge <= 0 {
		return 0, false
	}
	return o.recent.lowest(o.now().Add(-maxAge))
}

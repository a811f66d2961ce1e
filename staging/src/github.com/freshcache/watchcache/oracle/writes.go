package oracle

import (
	"time"

	"github.com/freshcache/watchcache/metrics"
)

// A Write is one write request of this process to the Oracle's etcd
// cluster, announced by WriteStarting just before it is sent. etcd orders
// every write in one revision sequence, and a write sent after a caller
// arrived is committed after every write that completed before the caller
// arrived, so the revision it is committed at answers the caller as a
// fetch would: the Oracle answers the rounds open at WriteStarting with it
// when the write succeeds. A nil *Write is valid and does nothing.
type Write struct {
	o      *Oracle
	covers uint64    // the id of the newest round open when it started; 0: none
	sent   time.Time // when WriteStarting announced it, for RecentRevision
}

// WriteStarting announces a write to the Oracle's etcd cluster that is about
// to be sent; call it just before the request goes out, after everything
// that may still decide not to send it. End the write with Succeeded or
// Failed. The rounds open now are answered by the write if it succeeds
// first; callers that arrive from now on are not. When no caller waits
// the Write answers nobody, but its revision still bounds later reads
// (RecentRevision). Returns nil (a valid Write that does nothing) once the
// Oracle is closed.
func (o *Oracle) WriteStarting() *Write {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.mu.closed {
		return nil
	}
	now := o.now()
	o.noteWriteLocked(now)
	if len(o.mu.open) == 0 {
		return &Write{o: o, sent: now}
	}
	o.mu.join = nil
	w := &Write{o: o, covers: o.mu.lastID, sent: now}
	o.mu.writes = append(o.mu.writes, w)
	if o.mu.holding {
		// The hold found its write: from now on the round waits for
		// this write as for any covering one (WriteWait), or fetches.
		o.stopWaitLocked()
		o.heldByWrites.Add(1)
		o.opts.Recorder.HoldEnded(metrics.HoldWrite)
		o.scheduleLocked(true)
	}
	return w
}

// Succeeded ends a write that etcd committed at revision rev (the revision
// in its response's header, which the etcd3 store sets as the written
// object's resourceVersion). It answers every round the write covers that
// is still open. A revision below 1 counts as Failed.
func (w *Write) Succeeded(rev int64) {
	if w == nil {
		return
	}
	w.o.writeEnded(w, rev)
}

// Failed ends a write that was not committed, or whose revision is unknown:
// an error, a conflict that the caller retries as another write, or an
// update that turned out to change nothing.
func (w *Write) Failed() {
	if w == nil {
		return
	}
	w.o.writeEnded(w, 0)
}

func (o *Oracle) writeEnded(w *Write, rev int64) {
	if rev > 0 {
		o.recent.add(w.sent, rev)
	}
	if w.covers == 0 {
		return // it answers no round and was never in flight
	}
	o.mu.Lock()
	found := false
	for i, q := range o.mu.writes {
		if q == w {
			o.mu.writes = append(o.mu.writes[:i], o.mu.writes[i+1:]...)
			found = true
			break
		}
	}
	reads := 0
	if found && rev > 0 && !o.mu.closed {
		// Counted before the answers, as a fetch's are.
		for _, r := range o.mu.open {
			if r.id > w.covers {
				break
			}
			reads += r.reads
		}
		o.fromWrites.Add(uint64(reads))
		if reads > 0 {
			o.opts.Recorder.WriteAnswered(reads)
		}
		for len(o.mu.open) > 0 && o.mu.open[0].id <= w.covers {
			o.answerLocked(o.mu.open[0], rev, nil)
		}
	}
	if found {
		o.scheduleLocked(true)
	}
	o.mu.Unlock()
}

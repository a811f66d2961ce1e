package linearizability

import (
	"fmt"
	"sort"
)

// Write is one acknowledged write of the history: a create or update that
// stored Key at revision RV, or a delete of Key at revision RV.
type Write struct {
	Key string
	// Invoke and Return are positions on the history's counter, taken just
	// before the call and just after it returned.
	Invoke, Return uint64
	RV             int64
	Delete         bool
}

// Read is one consistent read and what it observed.
type Read struct {
	// Name identifies the read in violations (cache, verb, number).
	Name           string
	Invoke, Return uint64
	// Key is the single key a GET read; "" for a read of the whole
	// resource (LIST, a WATCH's initial state).
	Key string
	// SnapshotRV is the revision the read claims to show (a LIST's RV,
	// the initial-events-end bookmark's RV); 0 if it has none (GET).
	SnapshotRV int64
	// Objects maps every key the read returned to the RV of the object
	// it returned.
	Objects map[string]int64
}

// Violation is a read that broke a rule, and why.
type Violation struct {
	Read   string
	Reason string
}

func (v Violation) String() string { return v.Read + ": " + v.Reason }

// Check verifies every read of the history against every write:
//
//  1. freshness: for every key in the read's scope, the read reflects the
//     newest write to that key acknowledged before the read started
//     (Return < read.Invoke), or a newer one;
//  2. snapshot freshness: a SnapshotRV is at least the revision of every
//     write acknowledged before the read started;
//  3. snapshot integrity: with a SnapshotRV, the read shows exactly the
//     state of its scope at that revision, as the writes define it;
//  4. no phantoms: every object returned was written, at that RV, by a
//     write that started before the read returned.
//
// The writes must be every write to the keys the reads cover (writes that
// may or may not have happened make rule 3 undecidable). The result lists
// violations in the order of reads; nil means the history is fresh.
func Check(writes []Write, reads []Read) []Violation {
	byKey := map[string][]Write{}
	for _, w := range writes {
		byKey[w.Key] = append(byKey[w.Key], w)
	}
	for _, ws := range byKey {
		sort.Slice(ws, func(i, j int) bool { return ws[i].RV < ws[j].RV })
	}
	var out []Violation
	for _, r := range reads {
		report := func(format string, args ...any) {
			out = append(out, Violation{Read: r.Name, Reason: fmt.Sprintf(format, args...)})
		}
		scope := []string{r.Key}
		if r.Key == "" {
			scope = scope[:0]
			for k := range byKey {
				scope = append(scope, k)
			}
			for k := range r.Objects {
				if _, ok := byKey[k]; !ok {
					scope = append(scope, k)
				}
			}
			sort.Strings(scope)
		}
		if r.SnapshotRV > 0 {
			if w, ok := newestAcked(writes, r.Invoke); ok && r.SnapshotRV < w.RV {
				report("snapshot at RV %d is older than the write of %s at %d, acknowledged before the read started", r.SnapshotRV, w.Key, w.RV)
			}
		}
		for _, k := range scope {
			checkKey(byKey[k], k, r, report)
		}
	}
	return out
}

// checkKey applies rules 1, 3 and 4 to one key of read r; ws are the
// key's writes in RV order.
func checkKey(ws []Write, key string, r Read, report func(string, ...any)) {
	rv, present := r.Objects[key]
	if present {
		w, ok := find(ws, rv)
		switch {
		case !ok || w.Delete:
			report("%s returned at RV %d, which no write produced", key, rv)
		case w.Invoke > r.Return:
			report("%s returned at RV %d, written by a write that started after the read returned", key, rv)
		}
	}
	if r.SnapshotRV > 0 {
		var at *Write
		for i := range ws {
			if ws[i].RV <= r.SnapshotRV {
				at = &ws[i]
			}
		}
		want := at != nil && !at.Delete
		switch {
		case want && !present:
			report("%s missing from the snapshot at RV %d, where it was written at %d", key, r.SnapshotRV, at.RV)
		case !want && present:
			report("%s present (RV %d) in the snapshot at RV %d, where it did not exist", key, rv, r.SnapshotRV)
		case want && present && rv != at.RV:
			report("%s at RV %d in the snapshot at RV %d, where its version is %d", key, rv, r.SnapshotRV, at.RV)
		}
	}
	// Freshness: the newest write to key acknowledged before the read.
	var last *Write
	for i := range ws {
		if ws[i].Return < r.Invoke && (last == nil || ws[i].RV > last.RV) {
			last = &ws[i]
		}
	}
	if last == nil {
		return
	}
	switch {
	case present && rv < last.RV:
		report("stale: %s returned at RV %d, but the %s at RV %d was acknowledged before the read started", key, rv, verb(*last), last.RV)
	case !present && !last.Delete && !deletedAfter(ws, last.RV, r):
		report("stale: %s missing, but written at RV %d (acknowledged before the read started) and not deleted since", key, last.RV)
	}
}

// deletedAfter reports whether a delete of the key newer than rv may
// explain its absence from r: it started before r returned and, if r has
// a snapshot, is in it.
func deletedAfter(ws []Write, rv int64, r Read) bool {
	for _, w := range ws {
		if w.Delete && w.RV > rv && w.Invoke < r.Return && (r.SnapshotRV == 0 || w.RV <= r.SnapshotRV) {
			return true
		}
	}
	return false
}

func find(ws []Write, rv int64) (Write, bool) {
	i := sort.Search(len(ws), func(i int) bool { return ws[i].RV >= rv })
	if i < len(ws) && ws[i].RV == rv {
		return ws[i], true
	}
	return Write{}, false
}

// newestAcked is the write with the highest RV among those that returned
// before invoke.
func newestAcked(writes []Write, invoke uint64) (Write, bool) {
	var best Write
	ok := false
	for _, w := range writes {
		if w.Return < invoke && (!ok || w.RV > best.RV) {
			best, ok = w, true
		}
	}
	return best, ok
}

// NewestAckedRV is the highest revision among the writes that returned
// before invoke, or 0: what a read invoked at invoke must at least show.
func NewestAckedRV(writes []Write, invoke uint64) int64 {
	w, _ := newestAcked(writes, invoke)
	return w.RV
}

func verb(w Write) string {
	if w.Delete {
		return "delete"
	}
	return "write"
}

package checker

import (
	"sort"
	"strconv"

	"github.com/freshcache/freshcache/lab/test/robustness/record"
)

type chainKey struct{ watcher, chain int }

// checkWatches validates each watcher chain (sessions that resume each
// other) incrementally against etcd's history of the events the watch
// selects:
//
//   - ordered: event RVs strictly increase; bookmarks never go back;
//   - unique: no (name, RV) is delivered twice in a chain;
//   - atomic: a revision's selected events arrive together and completely;
//   - bookmarkable: a bookmark at B comes after every selected event <= B;
//   - reliable: no selected event between two received ones is missing;
//   - resumable: a resumed session starts at the last RV received before
//     the break and its first event is the next selected event after it;
//   - matches-etcd: each event's name, type and value are etcd's.
//
// A 410 (Gone) ends a chain; the watcher starts a new one with a LIST, which
// checkReads and checkTimeTravel cover.
func checkWatches(r *Report, run *record.Run, truth *record.Truth) {
	chains := map[chainKey][]*record.WatchSession{}
	var keys []chainKey
	for i := range run.Sessions {
		s := &run.Sessions[i]
		k := chainKey{s.Watcher, s.Chain}
		if _, ok := chains[k]; !ok {
			keys = append(keys, k)
		}
		chains[k] = append(chains[k], s)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].watcher != keys[j].watcher {
			return keys[i].watcher < keys[j].watcher
		}
		return keys[i].chain < keys[j].chain
	})
	for _, k := range keys {
		ss := chains[k]
		sort.SliceStable(ss, func(i, j int) bool { return ss[i].Start < ss[j].Start })
		checkChain(r, truth, k, ss)
	}
}

func selects(node string, e record.TruthEvent) bool { return node == "" || e.Node == node }

func eventType(e record.TruthEvent) record.EventType {
	switch {
	case e.Deleted:
		return record.Deleted
	case e.Created:
		return record.Added
	default:
		return record.Modified
	}
}

func checkChain(r *Report, truth *record.Truth, k chainKey, ss []*record.WatchSession) {
	node := ss[0].Node
	// pos: every selected event with revision <= pos has been accounted
	// for (received or reported missing).
	pos := ss[0].StartRV
	// lastRV: the last RV received (event or bookmark): where a resume must
	// start. lastEvent: the last event's RV.
	lastRV, lastEvent := ss[0].StartRV, ss[0].StartRV
	seen := map[string]bool{}
	missingIn := func(from, to int64) []record.TruthEvent {
		var out []record.TruthEvent
		for _, e := range truth.Between(from, to) {
			if selects(node, e) {
				out = append(out, e)
			}
		}
		return out
	}
	for si, s := range ss {
		r.Checked["watch-sessions"]++
		if si > 0 && s.StartRV != lastRV {
			r.add(WatchResumable, "watcher %d chain %d: session %d on cache %d resumed from RV %d, but the last RV received was %d", k.watcher, k.chain, si, s.Cache, s.StartRV, lastRV)
			pos = max(pos, s.StartRV)
		}
		first := true
		// Group the session's events by revision for the atomic check.
		for i := 0; i < len(s.Events); i++ {
			e := s.Events[i]
			switch e.Type {
			case record.Error:
				continue
			case record.Bookmark:
				r.Checked["watch-bookmarks"]++
				if e.RV < lastRV {
					r.add(WatchBookmarkable, "watcher %d chain %d: bookmark at RV %d after RV %d was received", k.watcher, k.chain, e.RV, lastRV)
					continue
				}
				for _, m := range missingIn(pos, e.RV) {
					r.add(WatchBookmarkable, "watcher %d chain %d: bookmark at RV %d on cache %d, but event %s %s at revision %d was never delivered", k.watcher, k.chain, e.RV, s.Cache, eventType(m), m.Name, m.Rev)
				}
				pos = max(pos, e.RV)
				lastRV = e.RV
				continue
			}
			r.Checked["watch-events"]++
			id := e.Name + "@" + strconv.FormatInt(e.RV, 10)
			if seen[id] {
				r.add(WatchUnique, "watcher %d chain %d: %s %s at RV %d delivered twice (cache %d)", k.watcher, k.chain, e.Type, e.Name, e.RV, s.Cache)
				continue
			}
			seen[id] = true
			if e.RV <= lastEvent || e.RV < lastRV {
				r.add(WatchOrdered, "watcher %d chain %d: %s %s at RV %d after RV %d (cache %d)", k.watcher, k.chain, e.Type, e.Name, e.RV, max(lastEvent, lastRV), s.Cache)
				continue
			}
			for _, m := range missingIn(pos, e.RV-1) {
				if si > 0 && first {
					r.add(WatchResumable, "watcher %d chain %d: session resumed from RV %d on cache %d skipped %s %s at revision %d", k.watcher, k.chain, s.StartRV, s.Cache, eventType(m), m.Name, m.Rev)
				} else {
					r.add(WatchReliable, "watcher %d chain %d: gap: %s %s at revision %d missing before RV %d (cache %d)", k.watcher, k.chain, eventType(m), m.Name, m.Rev, e.RV, s.Cache)
				}
			}
			first = false
			// Atomic: the revision's selected events, all and only them,
			// arrive together.
			got := map[string]record.WatchEvent{e.Name: e}
			for i+1 < len(s.Events) && s.Events[i+1].Type != record.Bookmark && s.Events[i+1].Type != record.Error && s.Events[i+1].RV == e.RV {
				i++
				n := s.Events[i]
				nid := n.Name + "@" + strconv.FormatInt(n.RV, 10)
				if seen[nid] {
					r.add(WatchUnique, "watcher %d chain %d: %s %s at RV %d delivered twice (cache %d)", k.watcher, k.chain, n.Type, n.Name, n.RV, s.Cache)
					continue
				}
				seen[nid] = true
				got[n.Name] = n
			}
			want := 0
			for _, m := range truth.AtRev(e.RV) {
				if !selects(node, m) {
					continue
				}
				want++
				w, ok := got[m.Name]
				if !ok {
					r.add(WatchAtomic, "watcher %d chain %d: revision %d delivered without its event on %s", k.watcher, k.chain, e.RV, m.Name)
					continue
				}
				if w.Type != eventType(m) || w.Value != m.Value {
					r.add(WatchMatchesEtcd, "watcher %d chain %d: %s %s value %q at RV %d (cache %d); etcd: %s value %q", k.watcher, k.chain, w.Type, w.Name, w.Value, w.RV, s.Cache, eventType(m), m.Value)
				}
			}
			if len(got) > want {
				for name, w := range got {
					if m, ok := truth.At(name, e.RV); !ok || !selects(node, m) {
						r.add(WatchMatchesEtcd, "watcher %d chain %d: %s %s at RV %d (cache %d) is not a selected event in etcd's history", k.watcher, k.chain, w.Type, name, e.RV, s.Cache)
					}
				}
			}
			pos = e.RV
			lastEvent, lastRV = e.RV, e.RV
		}
	}
}

package record

import (
	"maps"
	"slices"
	"sort"
)

// Kind is the kind of a client operation.
type Kind string

// Operation kinds.
const (
	Create Kind = "create"
	Update Kind = "update" // GuaranteedUpdate with a ResourceVersion precondition
	Delete Kind = "delete" // Delete with a ResourceVersion precondition
	Get    Kind = "get"
	List   Kind = "list" // all pods; with Node set, the pods of one node
)

// ReadMode is the resourceVersion semantics of a read.
type ReadMode string

// Read modes.
const (
	Consistent ReadMode = "consistent" // rv=""
	Zero       ReadMode = "zero"       // rv="0"
	NotOlder   ReadMode = "notolder"   // rv=N, NotOlderThan
)

// Outcome is how an operation ended.
type Outcome string

// Outcomes. Unknown is an error after which a write may or may not have
// been applied (timeout, connection loss); Failed is a definite error that
// did not change state (conflict, already exists, not found, 429...).
const (
	OK      Outcome = "ok"
	Failed  Outcome = "failed"
	Unknown Outcome = "unknown"
)

// Failure reasons for Failed.
const (
	ReasonExists   = "exists"
	ReasonConflict = "conflict"
	ReasonNotFound = "notfound"
)

// Item is one object as a client saw it.
type Item struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Node   string `json:"node,omitempty"`
	ModRev int64  `json:"modRev"`
}

// Op is one client operation and its result.
type Op struct {
	ID     int      `json:"id"`
	Client int      `json:"client"`
	Cache  int      `json:"cache"`
	Kind   Kind     `json:"kind"`
	Mode   ReadMode `json:"mode,omitempty"`
	// MinRV is N for NotOlder reads.
	MinRV int64 `json:"minRV,omitempty"`
	// Name is the object of Create, Update, Delete and Get.
	Name string `json:"name,omitempty"`
	// Node is the node of a created pod, or the node a List selects.
	Node string `json:"node,omitempty"`
	// Value is what Create and Update write (unique per write).
	Value string `json:"value,omitempty"`
	// PreRV is the ResourceVersion precondition of Update and Delete.
	PreRV int64 `json:"preRV,omitempty"`

	Call   int64   `json:"call"`
	Return int64   `json:"return"`
	Out    Outcome `json:"outcome"`
	Reason string  `json:"reason,omitempty"`
	Err    string  `json:"err,omitempty"`

	// RV is the revision of a successful write (for Delete: the revision of
	// the deletion), the modRev of the object a Get found, or a List's RV.
	RV int64 `json:"rv,omitempty"`
	// Found and Got are a Get's answer.
	Found bool   `json:"found,omitempty"`
	Got   string `json:"got,omitempty"`
	// Items is a List's answer.
	Items []Item `json:"items,omitempty"`

	// Batch and BatchID group the ops that one etcd revision made on
	// several keys: a client's multi-key transaction (one op per key, all
	// with the transaction's Call, Return, outcome and RV), and the
	// deletion of a lease's keys when it expired or was revoked. BatchID
	// numbers a client's batches; a lease's puts and their deletion share
	// it. Empty for an op on one key through an API. The checkers judge
	// every op on its own key; these fields are for reports.
	Batch   Batch `json:"batch,omitempty"`
	BatchID int   `json:"batchID,omitempty"`
}

// Batch is how several per-key ops came from one etcd revision.
type Batch string

// Batches.
const (
	// BatchTxn: a client's conditional etcd transaction on 2-4 keys.
	BatchTxn Batch = "txn"
	// BatchLease: a client's transaction creating 2-4 keys attached to a
	// lease it has just granted.
	BatchLease Batch = "lease"
	// BatchLeaseExpiry: etcd deleting a lease's keys when it expired.
	BatchLeaseExpiry Batch = "lease-expiry"
	// BatchLeaseRevoke: the client revoking the lease, when it had not
	// expired in time or the run was ending.
	BatchLeaseRevoke Batch = "lease-revoke"
)

// IsWrite reports whether the op changes state when it succeeds.
func (o *Op) IsWrite() bool { return o.Kind == Create || o.Kind == Update || o.Kind == Delete }

// EventType is a watch event type.
type EventType string

// Watch event types, as k8s.io/apimachinery/pkg/watch names them.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// WatchEvent is one event a watcher received.
type WatchEvent struct {
	Type EventType `json:"type"`
	// RV is the object's ResourceVersion (for a bookmark: its RV; for a
	// deletion: the revision of the deletion).
	RV    int64  `json:"rv"`
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
	Node  string `json:"node,omitempty"`
	Time  int64  `json:"time"`
	Err   string `json:"err,omitempty"`
}

// WatchSession is one Watch call, from a start RV until the channel closed
// or the watcher gave up.
type WatchSession struct {
	// Watcher identifies the watcher; its sessions form chains. It is the
	// watcher's client ID: the LISTs that start its chains are Ops of that
	// Client.
	Watcher int `json:"watcher"`
	// Chain numbers the chains of one watcher: a new chain starts with a
	// LIST after the previous chain could not resume (410 Gone). Sessions
	// of one chain resume each other: each starts at the last RV the
	// previous one received.
	Chain int `json:"chain"`
	Cache int `json:"cache"`
	// Node restricts the watch to spec.nodeName=Node when set.
	Node    string `json:"node,omitempty"`
	StartRV int64  `json:"startRV"`
	Start   int64  `json:"start"`
	End     int64  `json:"end"`
	// EndReason says why the session ended (closed, error, gone, timeout).
	EndReason string       `json:"endReason"`
	Events    []WatchEvent `json:"events"`
	// Slow marks the session of the slow-watcher fault: it stopped reading
	// for a while.
	Slow bool `json:"slow,omitempty"`
}

// TruthEvent is one change in etcd's history of the key space, as a direct
// etcd watch reported it.
//
// For a deletion, Value and Node are those of the deleted version.
type TruthEvent struct {
	Rev     int64  `json:"rev"`
	Name    string `json:"name"`
	Deleted bool   `json:"deleted,omitempty"`
	Created bool   `json:"created,omitempty"`
	Value   string `json:"value,omitempty"`
	Node    string `json:"node,omitempty"`
	// PrevModRev is the modRev of the version this event replaced.
	PrevModRev int64 `json:"prevModRev,omitempty"`
}

// Fault is one injected fault.
type Fault struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail"`
	// Rev is the compaction revision of a compaction fault.
	Rev   int64  `json:"rev,omitempty"`
	Start int64  `json:"start"`
	End   int64  `json:"end"`
	Err   string `json:"err,omitempty"`
}

// Run is everything one robustness run recorded.
type Run struct {
	Seed     uint64         `json:"seed"`
	Variant  string         `json:"variant"`
	Ops      []Op           `json:"ops"`
	Sessions []WatchSession `json:"sessions"`
	Truth    []TruthEvent   `json:"truth"`
	Faults   []Fault        `json:"faults"`
	// FinalRev is the revision etcd was at when traffic stopped and the
	// truth watch had caught up with it.
	FinalRev int64 `json:"finalRev"`
	// Keys is the key space: every name the clients use.
	Keys []string `json:"keys"`
	// ContiguousTruth says that only the clients write to etcd, so the
	// truth's revisions must have no holes (in-process caches; a real
	// kube-apiserver writes other keys too).
	ContiguousTruth bool `json:"contiguousTruth"`
	// RV0Consistent says whether rv=0 reads promise freshness (freshcache
	// with FreshResourceVersionZero); then they are checked like
	// consistent reads.
	RV0Consistent bool `json:"rv0Consistent"`
	// RV0Staleness (nanoseconds) is how far behind its call an rv=0 read
	// may be when RV0Consistent (the cache's staleness bound): it must
	// reflect every write acknowledged that long before it was called, so
	// the checkers see it as called that much earlier. Zero: strict.
	RV0Staleness int64 `json:"rv0Staleness,omitempty"`
}

// Truth indexes etcd's history for the checkers.
type Truth struct {
	events []TruthEvent
	byName map[string][]TruthEvent // sorted by Rev
	byRev  map[int64][]TruthEvent
	// values maps a written value to its event.
	values map[string]TruthEvent
	// deletes maps (name, prevModRev) to the deletion event.
	deletes map[nameRev]TruthEvent
	// system maps (name, prevModRev) to a system update of that version.
	system map[nameRev]TruthEvent
}

type nameRev struct {
	name string
	rev  int64
}

// NewTruth indexes events (any order).
func NewTruth(events []TruthEvent) *Truth {
	t := &Truth{
		events:  append([]TruthEvent(nil), events...),
		byName:  map[string][]TruthEvent{},
		byRev:   map[int64][]TruthEvent{},
		values:  map[string]TruthEvent{},
		deletes: map[nameRev]TruthEvent{},
		system:  map[nameRev]TruthEvent{},
	}
	sort.Slice(t.events, func(i, j int) bool { return t.events[i].Rev < t.events[j].Rev })
	for _, e := range t.events {
		evs := t.byName[e.Name]
		t.byName[e.Name] = append(evs, e)
		t.byRev[e.Rev] = append(t.byRev[e.Rev], e)
		switch {
		case e.Deleted:
			t.deletes[nameRev{e.Name, e.PrevModRev}] = e
		case isSystem(evs, e):
			t.system[nameRev{e.Name, e.PrevModRev}] = e
		default:
			t.values[e.Value] = e
		}
	}
	return t
}

// isSystem reports whether e is a write no client made: an update that
// keeps the value of the version it replaces. Clients write a new unique
// value with every update; kube-apiserver's graceful deletion first
// updates the pod (deletionTimestamp) and then deletes it.
func isSystem(before []TruthEvent, e TruthEvent) bool {
	if e.Created || e.Deleted || len(before) == 0 {
		return false
	}
	prev := before[len(before)-1]
	return !prev.Deleted && prev.Rev == e.PrevModRev && prev.Value == e.Value
}

// SystemChain returns the system updates (see isSystem) that followed the
// version of name at modRev, in order.
func (t *Truth) SystemChain(name string, modRev int64) []TruthEvent {
	var out []TruthEvent
	for {
		e, ok := t.system[nameRev{name, modRev}]
		if !ok {
			return out
		}
		out = append(out, e)
		modRev = e.Rev
	}
}

// Events returns every event in revision order.
func (t *Truth) Events() []TruthEvent { return t.events }

// At returns the event of name at rev, if any.
func (t *Truth) At(name string, rev int64) (TruthEvent, bool) {
	for _, e := range t.byRev[rev] {
		if e.Name == name {
			return e, true
		}
	}
	return TruthEvent{}, false
}

// AtRev returns every event at rev (one per key the revision's transaction
// changed).
func (t *Truth) AtRev(rev int64) []TruthEvent { return t.byRev[rev] }

// ByValue returns the write that stored value.
func (t *Truth) ByValue(v string) (TruthEvent, bool) { e, ok := t.values[v]; return e, ok }

// Marked reports whether the version of name at modRev is a system update
// (see isSystem): kube-apiserver's marking of a pod it is deleting.
func (t *Truth) Marked(name string, modRev int64) bool {
	e, ok := t.At(name, modRev)
	if !ok {
		return false
	}
	s, ok := t.system[nameRev{name, e.PrevModRev}]
	return ok && s.Rev == modRev
}

// DeletionOf returns the deletion of the version of name at modRev.
func (t *Truth) DeletionOf(name string, modRev int64) (TruthEvent, bool) {
	e, ok := t.deletes[nameRev{name, modRev}]
	return e, ok
}

// StateAt returns the version of name at rev: the last event at or before
// rev, and whether the object existed then.
func (t *Truth) StateAt(name string, rev int64) (TruthEvent, bool) {
	evs := t.byName[name]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Rev > rev })
	if i == 0 {
		return TruthEvent{}, false
	}
	e := evs[i-1]
	return e, !e.Deleted
}

// NextChange returns the revision of the first event on name after rev, or
// 0 when there is none.
func (t *Truth) NextChange(name string, rev int64) int64 {
	evs := t.byName[name]
	i := sort.Search(len(evs), func(i int) bool { return evs[i].Rev > rev })
	if i == len(evs) {
		return 0
	}
	return evs[i].Rev
}

// DeletedAfter reports whether name was deleted at some revision > rev.
func (t *Truth) DeletedAfter(name string, rev int64) bool {
	evs := t.byName[name]
	for i := sort.Search(len(evs), func(i int) bool { return evs[i].Rev > rev }); i < len(evs); i++ {
		if evs[i].Deleted {
			return true
		}
	}
	return false
}

// Between returns the events with from < Rev <= to, in order.
func (t *Truth) Between(from, to int64) []TruthEvent {
	i := sort.Search(len(t.events), func(i int) bool { return t.events[i].Rev > from })
	j := sort.Search(len(t.events), func(i int) bool { return t.events[i].Rev > to })
	return t.events[i:j]
}

// Names returns every name that ever had an event.
func (t *Truth) Names() []string {
	return slices.Sorted(maps.Keys(t.byName))
}

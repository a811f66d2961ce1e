package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/cacher/delegator"
)

// Verb is the kind of read.
type Verb uint8

// The verbs.
const (
	List Verb = iota + 1
	Get
	Watch
)

func (v Verb) String() string {
	switch v {
	case List:
		return "list"
	case Get:
		return "get"
	case Watch:
		return "watch"
	}
	return "unknown"
}

// Request is one read, parsed and validated by the caller.
type Request struct {
	Verb Verb
	// ResourceVersion is as the client sent it; RV is it parsed (0 for ""
	// and "0").
	ResourceVersion string
	RV              uint64
	Match           metav1.ResourceVersionMatch
	Limit           int64
	Recursive       bool
	// Continue is the LIST's continue token; ContinueRV its revision
	// (negative: the continuation of a consistent list).
	Continue   string
	ContinueRV int64
	// Selective: the LIST has a label or field selector.
	Selective bool
	// SendInitialEvents is the WATCH's sendInitialEvents.
	SendInitialEvents *bool
	// Misplaced: the request touches a key the cache cannot hold (an
	// object written at a key that is not its KeyFunc key).
	Misplaced bool
}

// Gates are the feature gates that shape plans, resolved once per cache.
type Gates struct {
	// Consistent is ConsistentReadsFromCache: GET and WATCH rv="" fresh
	// from the cache (LIST rv="" is, whatever it says).
	Consistent bool
	// FreshZero is FreshResourceVersionZero.
	FreshZero bool
	// Snapshots is upstream's ListFromCacheSnapshot: Exact reads and
	// continuations are served from history snapshots.
	Snapshots bool
}

// State is what the cache knows when the request arrives.
type State struct {
	// Ready: the cache's state is current (internal/ready).
	Ready bool
	// Untrusted: the etcd version guard tripped. Consistent reads go to
	// etcd and no wait may rest on a progress notification.
	Untrusted bool
	// RV is the cache revision.
	RV uint64
	// Compacted returns the revision etcd compacted to, as the store last
	// saw it (0: none). It is asked only for an Exact plan: the etcd3
	// store answers it under a lock its compactor shares with every
	// resource, which no other read should take. Nil means none.
	Compacted func() int64
}

// Source says where a read is answered from.
type Source uint8

// The sources.
const (
	// Etcd: delegate the request to etcd as it is.
	Etcd Source = iota + 1
	// Snapshot: the newest snapshot, as it is, without a wait.
	Snapshot
	// Fresh: the newest snapshot after a consistent freshness wait (a
	// revision fetched from etcd after the request arrived, and c >= it).
	Fresh
	// NotOlder: the newest snapshot once the cache revision reached RV.
	NotOlder
	// Exact: the history's snapshot at exactly RV.
	Exact
	// NotReady: refuse with 429 and a Retry-After (the cache is pending).
	NotReady
	// Refuse: refuse with an error watcher (a watch-list the cache cannot
	// prove fresh: the guard tripped).
	Refuse
)

func (s Source) String() string {
	return [...]string{"?", "etcd", "snapshot", "fresh", "notolder", "exact", "notready", "refuse"}[s]
}

// Start is where a watch's events begin (watches only).
type Start uint8

// The starts.
const (
	// FromHistory: every change after the request's RV, from history.
	FromHistory Start = iota + 1
	// WithState: the state at the start as ADDED events, then changes
	// (sendInitialEvents=true, or the legacy rv=""/rv=0 watch).
	WithState
	// FromNow: changes from the start on (sendInitialEvents=false with
	// rv="" or "0").
	FromNow
)

// Plan is how one read is answered.
type Plan struct {
	Source Source
	// RV is the target of NotOlder and the revision of Exact.
	RV uint64
	// Zero: the request was rv=0. A Fresh zero read that falls back to
	// etcd asks for a quorum read (rv="", which "any" allows).
	Zero bool
	// IgnoreLimit: rv=0 LISTs ignore the limit, as upstream's cacher
	// (kubernetes#108003): client-go's reflector relies on it.
	IgnoreLimit bool
	// Start, for watches.
	Start Start
	// EtcdRevision: a watch-list at rv="" with the gates off needs at
	// least etcd's current revision (the caller fetches it, then waits as
	// NotOlder).
	EtcdRevision bool
	// Guarded: a consistent read sent to etcd because the version guard
	// tripped (counted as a fallback).
	Guarded bool
}

// Metrics labels of Requested.
const (
	RequestedConsistent   = "consistent"
	RequestedZero         = "zero"
	RequestedNotOlderThan = "notolderthan"
)

// Requested is the metrics label of a read that waits for freshness
// (requested=consistent|zero|notolderthan), or "" for one that does not.
func (p Plan) Requested() string {
	switch {
	case (p.Source == Fresh || p.Guarded) && p.Zero:
		return RequestedZero
	case p.Source == Fresh || p.Guarded:
		return RequestedConsistent
	case p.Source == NotOlder, p.EtcdRevision:
		return RequestedNotOlderThan
	}
	return ""
}

// For plans one read.
func For(req Request, g Gates, s State) Plan {
	switch req.Verb {
	case List:
		return forList(req, g, s)
	case Get:
		return forGet(req, g, s)
	default:
		return forWatch(req, g, s)
	}
}

// consistent plans a consistent read (rv="", or rv=0 under FreshZero).
func consistent(s State, zero bool) Plan {
	if s.Untrusted {
		return Plan{Source: Etcd, Zero: zero, Guarded: true}
	}
	return Plan{Source: Fresh, Zero: zero}
}

// zero plans an rv=0 read.
func zero(g Gates, s State) Plan {
	if g.FreshZero {
		return consistent(s, true)
	}
	return Plan{Source: Snapshot, Zero: true}
}

func forGet(req Request, g Gates, s State) Plan {
	switch {
	case !s.Ready, req.Misplaced:
		// KEP-4568: a GET while the cache is pending goes to etcd.
		return Plan{Source: Etcd}
	case req.ResourceVersion == "":
		if g.Consistent {
			return consistent(s, false)
		}
		return Plan{Source: Etcd}
	case req.RV == 0:
		return zero(g, s)
	}
	return Plan{Source: NotOlder, RV: req.RV}
}

// branch records which row of the resourceVersion table upstream's
// delegator.ShouldDelegateList took.
type branch struct {
	kind string // "exact", "continue", "consistent" or "" (any / not older than)
}

func (b *branch) ShouldDelegateExactRV(string, bool) (delegator.Result, error) {
	b.kind = "exact"
	return delegator.Result{}, nil
}

func (b *branch) ShouldDelegateContinue(string, bool) (delegator.Result, error) {
	b.kind = "continue"
	return delegator.Result{}, nil
}

func (b *branch) ShouldDelegateConsistentRead() (delegator.Result, error) {
	b.kind = "consistent"
	return delegator.Result{ConsistentRead: true}, nil
}

func forList(req Request, g Gates, s State) Plan {
	var b branch
	res, err := delegator.ShouldDelegateList(storage.ListOptions{
		ResourceVersion:      req.ResourceVersion,
		ResourceVersionMatch: req.Match,
		Recursive:            req.Recursive,
		Predicate:            storage.SelectionPredicate{Limit: req.Limit, Continue: req.Continue},
	}, &b)
	var p Plan
	switch {
	case err != nil || (res.ShouldDelegate && b.kind == ""):
		// A row upstream does not serve from its cache (an unknown match;
		// the caller rejected those already).
		p = Plan{Source: Etcd}
	case b.kind == "continue":
		switch {
		case !g.Snapshots:
			p = Plan{Source: Etcd}
		case req.ContinueRV > 0:
			p = exact(uint64(req.ContinueRV), s)
		default:
			// The continuation of a consistent list is itself one.
			p = consistent(s, false)
		}
	case b.kind == "exact":
		if !g.Snapshots {
			p = Plan{Source: Etcd}
		} else {
			p = exact(req.RV, s)
		}
	case b.kind == "consistent":
		// Served fresh from the cache whatever ConsistentReadsFromCache
		// says, as upstream's GA consistent list is; the gate decides GET
		// and WATCH with rv="".
		p = consistent(s, false)
	case req.ResourceVersion == "0" || req.RV == 0:
		p = zero(g, s)
	default:
		p = Plan{Source: NotOlder, RV: req.RV}
	}
	zeroRV := req.ResourceVersion == "0"
	if p.Source == Etcd {
		// Delegated as asked (upstream keeps the limit of what it
		// delegates), except a consistent rv=0 read: it becomes etcd's
		// quorum read and keeps its one-piece answer.
		p.IgnoreLimit = zeroRV && p.Guarded
		return p
	}
	p.IgnoreLimit = zeroRV
	if req.Misplaced {
		// The cache cannot hold what etcd has in this range.
		return Plan{Source: Etcd, IgnoreLimit: p.IgnoreLimit}
	}
	if !s.Ready {
		// KEP-4568: what etcd answers cheaply goes there, the rest waits.
		if !req.Selective && req.Limit > 0 {
			return Plan{Source: Etcd}
		}
		return Plan{Source: NotReady}
	}
	return p
}

// exact plans an Exact read at rv.
func exact(rv uint64, s State) Plan {
	switch {
	case s.Compacted != nil && compactedBeyond(s.Compacted(), rv):
		// etcd has forgotten rv; let it answer as it does.
		return Plan{Source: Etcd}
	case s.Untrusted && rv > s.RV:
		// Waiting would rest on events alone: etcd answers at once, as
		// upstream delegates a not-yet-fresh Exact read when etcd cannot
		// serve progress requests.
		return Plan{Source: Etcd}
	}
	return Plan{Source: Exact, RV: rv}
}

// compactedBeyond reports whether etcd compacted past rv.
func compactedBeyond(compacted int64, rv uint64) bool {
	return compacted > 0 && rv < uint64(compacted)
}

func forWatch(req Request, g Gates, s State) Plan {
	if !s.Ready {
		return Plan{Source: NotReady}
	}
	sendInitial := req.SendInitialEvents != nil && *req.SendInitialEvents
	if sendInitial && s.Untrusted {
		return Plan{Source: Refuse}
	}
	start := FromHistory
	switch {
	case sendInitial:
		start = WithState
	case req.RV == 0 && req.SendInitialEvents == nil:
		start = WithState // legacy: the state, then changes
	case req.RV == 0:
		start = FromNow
	}
	var p Plan
	switch {
	case req.ResourceVersion == "" && g.Consistent && !s.Untrusted:
		p = Plan{Source: Fresh}
	case req.ResourceVersion == "0" && g.FreshZero && !s.Untrusted:
		p = Plan{Source: Fresh, Zero: true}
	case sendInitial && req.ResourceVersion == "":
		// Upstream's watch-list: the state at etcd's current revision.
		p = Plan{Source: Snapshot, EtcdRevision: true}
	case sendInitial && req.RV > 0:
		p = Plan{Source: NotOlder, RV: req.RV}
	default:
		// A watch never goes to etcd; these start from the cache as is.
		p = Plan{Source: Snapshot, Zero: req.RV == 0}
	}
	p.Start = start
	return p
}

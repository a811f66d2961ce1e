package plan

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	yes, no = true, false
	on      = Gates{Consistent: true, Snapshots: true}
	fresh0  = Gates{Consistent: true, FreshZero: true, Snapshots: true}
	off     = Gates{Snapshots: true}
	noSnap  = Gates{Consistent: true}
	ready   = State{Ready: true, RV: 100}
	pending = State{RV: 100}
	guarded = State{Ready: true, Untrusted: true, RV: 100}
)

func rvReq(verb Verb, rv string, match metav1.ResourceVersionMatch, limit int64) Request {
	var n uint64
	if rv != "" {
		if _, err := fmt.Sscan(rv, &n); err != nil {
			panic(err)
		}
	}
	return Request{Verb: verb, ResourceVersion: rv, RV: n, Match: match, Limit: limit, Recursive: true}
}

// TestResourceVersionTable walks the API's resourceVersion table
// (kubernetes.io/docs/reference/using-api/api-concepts, "Semantics for get
// and list" and "for watch") row by row, under each gate setting.
func TestResourceVersionTable(t *testing.T) {
	const nt, ex = metav1.ResourceVersionMatchNotOlderThan, metav1.ResourceVersionMatchExact
	cases := []struct {
		name string
		req  Request
		g    Gates
		s    State
		want Plan
	}{
		// GET
		{"get unset, consistent on: most recent, fresh", rvReq(Get, "", "", 0), on, ready, Plan{Source: Fresh}},
		{"get unset, consistent off: etcd", rvReq(Get, "", "", 0), off, ready, Plan{Source: Etcd}},
		{"get 0: any, as the cache is", rvReq(Get, "0", "", 0), on, ready, Plan{Source: Snapshot, Zero: true}},
		{"get 0 under FreshResourceVersionZero: fresh", rvReq(Get, "0", "", 0), fresh0, ready, Plan{Source: Fresh, Zero: true}},
		{"get N: not older than N", rvReq(Get, "42", "", 0), on, ready, Plan{Source: NotOlder, RV: 42}},
		{"get while pending: etcd", rvReq(Get, "42", "", 0), on, pending, Plan{Source: Etcd}},
		{"get unset with the guard tripped: etcd", rvReq(Get, "", "", 0), on, guarded, Plan{Source: Etcd, Guarded: true}},

		// LIST, match unset
		{"list unset: most recent, fresh", rvReq(List, "", "", 0), on, ready, Plan{Source: Fresh}},
		{"list unset, limit: fresh (limit applies)", rvReq(List, "", "", 5), on, ready, Plan{Source: Fresh}},
		{"list unset, consistent off: fresh all the same (upstream's GA consistent list)", rvReq(List, "", "", 0), off, ready, Plan{Source: Fresh}},
		{"list 0: any, limit ignored", rvReq(List, "0", "", 5), on, ready, Plan{Source: Snapshot, Zero: true, IgnoreLimit: true}},
		{"list 0 under FreshResourceVersionZero", rvReq(List, "0", "", 5), fresh0, ready, Plan{Source: Fresh, Zero: true, IgnoreLimit: true}},
		{"list N, no limit: not older than", rvReq(List, "42", "", 0), on, ready, Plan{Source: NotOlder, RV: 42}},
		{"list N, limit: exact (legacy)", rvReq(List, "42", "", 5), on, ready, Plan{Source: Exact, RV: 42}},
		{"list N, limit, snapshots off: etcd", rvReq(List, "42", "", 5), noSnap, ready, Plan{Source: Etcd}},

		// LIST, NotOlderThan
		{"list NotOlderThan 0: any", rvReq(List, "0", nt, 5), on, ready, Plan{Source: Snapshot, Zero: true, IgnoreLimit: true}},
		{"list NotOlderThan N", rvReq(List, "42", nt, 5), on, ready, Plan{Source: NotOlder, RV: 42}},

		// LIST, Exact
		{"list Exact N", rvReq(List, "42", ex, 0), on, ready, Plan{Source: Exact, RV: 42}},
		{"list Exact N below the compaction: etcd", rvReq(List, "42", ex, 0), on, State{Ready: true, RV: 100, Compacted: func() int64 { return 50 }}, Plan{Source: Etcd}},
		{"list Exact N beyond the cache, guard tripped: etcd", rvReq(List, "142", ex, 0), on, guarded, Plan{Source: Etcd}},
		{"list Exact N within the cache, guard tripped", rvReq(List, "42", ex, 0), on, guarded, Plan{Source: Exact, RV: 42}},
		{"list Exact N, snapshots off: etcd", rvReq(List, "42", ex, 0), noSnap, ready, Plan{Source: Etcd}},
		{"list unknown match: etcd", rvReq(List, "42", "Sometimes", 0), on, ready, Plan{Source: Etcd}},

		// LIST, continue
		{"continue at N: exact", Request{Verb: List, Recursive: true, Limit: 5, Continue: "t", ContinueRV: 42}, on, ready, Plan{Source: Exact, RV: 42}},
		{"continue of a consistent list: fresh", Request{Verb: List, Recursive: true, Limit: 5, Continue: "t", ContinueRV: -1}, on, ready, Plan{Source: Fresh}},
		{"continue of a consistent list, consistent off: fresh all the same", Request{Verb: List, Recursive: true, Limit: 5, Continue: "t", ContinueRV: -1}, off, ready, Plan{Source: Fresh}},
		{"continue at rv=0, snapshots off: etcd with its limit", Request{Verb: List, ResourceVersion: "0", Recursive: true, Limit: 1, Continue: "t", ContinueRV: 42}, noSnap, ready, Plan{Source: Etcd}},
		{"continue, snapshots off: etcd", Request{Verb: List, Recursive: true, Limit: 5, Continue: "t", ContinueRV: 42}, noSnap, ready, Plan{Source: Etcd}},

		// LIST while pending (KEP-4568)
		{"pending, limited and unfiltered: etcd", rvReq(List, "0", "", 5), on, pending, Plan{Source: Etcd}},
		{"pending, unlimited: 429", rvReq(List, "0", "", 0), on, pending, Plan{Source: NotReady}},
		{"pending, limited but selective: 429", Request{Verb: List, ResourceVersion: "", Limit: 5, Recursive: true, Selective: true}, on, pending, Plan{Source: NotReady}},
		{"pending, consistent off: 429 as with it on (KEP-4568)", rvReq(List, "", "", 0), off, pending, Plan{Source: NotReady}},
		{"misplaced key, rv=0: etcd without the limit", Request{Verb: List, ResourceVersion: "0", Limit: 5, Recursive: true, Misplaced: true}, on, ready, Plan{Source: Etcd, IgnoreLimit: true}},
		{"list unset, guard tripped: etcd", rvReq(List, "", "", 0), on, guarded, Plan{Source: Etcd, Guarded: true}},
		{"list 0 under FreshResourceVersionZero, guard tripped: etcd", rvReq(List, "0", "", 0), fresh0, guarded, Plan{Source: Etcd, Zero: true, IgnoreLimit: true, Guarded: true}},

		// WATCH
		{"watch unset: fresh, the state then changes", rvReq(Watch, "", "", 0), on, ready, Plan{Source: Fresh, Start: WithState}},
		{"watch unset, consistent off: the cache's state", rvReq(Watch, "", "", 0), off, ready, Plan{Source: Snapshot, Zero: true, Start: WithState}},
		{"watch 0: the cache's state, then changes", rvReq(Watch, "0", "", 0), on, ready, Plan{Source: Snapshot, Zero: true, Start: WithState}},
		{"watch 0 under FreshResourceVersionZero", rvReq(Watch, "0", "", 0), fresh0, ready, Plan{Source: Fresh, Zero: true, Start: WithState}},
		{"watch N: changes after N", rvReq(Watch, "42", "", 0), on, ready, Plan{Source: Snapshot, Start: FromHistory}},
		{"watch-list unset: fresh", Request{Verb: Watch, SendInitialEvents: &yes}, on, ready, Plan{Source: Fresh, Start: WithState}},
		{"watch-list unset, consistent off: etcd's revision", Request{Verb: Watch, SendInitialEvents: &yes}, off, ready, Plan{Source: Snapshot, EtcdRevision: true, Start: WithState}},
		{"watch-list N: not older than N", Request{Verb: Watch, ResourceVersion: "42", RV: 42, SendInitialEvents: &yes}, on, ready, Plan{Source: NotOlder, RV: 42, Start: WithState}},
		{"watch unset, sendInitialEvents=false: changes from now", Request{Verb: Watch, SendInitialEvents: &no}, on, ready, Plan{Source: Fresh, Start: FromNow}},
		{"watch-list with the guard tripped: refused", Request{Verb: Watch, SendInitialEvents: &yes}, on, guarded, Plan{Source: Refuse}},
		{"watch unset with the guard tripped: the cache's state", rvReq(Watch, "", "", 0), on, guarded, Plan{Source: Snapshot, Zero: true, Start: WithState}},
		{"watch while pending: 429", rvReq(Watch, "42", "", 0), on, pending, Plan{Source: NotReady}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := For(tc.req, tc.g, tc.s); got != tc.want {
				t.Fatalf("For(%+v, %+v, %+v)\n got %+v\nwant %+v", tc.req, tc.g, tc.s, got, tc.want)
			}
		})
	}
}

func TestRequestedFollowsThePlan(t *testing.T) {
	cases := []struct {
		p    Plan
		want string
	}{
		{Plan{Source: Fresh}, RequestedConsistent},
		{Plan{Source: Fresh, Zero: true}, RequestedZero},
		{Plan{Source: NotOlder, RV: 3}, RequestedNotOlderThan},
		{Plan{Source: Snapshot, EtcdRevision: true}, RequestedNotOlderThan},
		{Plan{Source: Snapshot, Zero: true}, ""},
		{Plan{Source: Etcd}, ""},
		{Plan{Source: Etcd, Guarded: true}, RequestedConsistent},
		{Plan{Source: Etcd, Guarded: true, Zero: true}, RequestedZero},
		{Plan{Source: Exact, RV: 3}, ""},
	}
	for _, tc := range cases {
		if got := tc.p.Requested(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.p, got, tc.want)
		}
	}
}

// TestCompactedAskedOnlyForExact: the compaction revision sits behind a
// lock shared by every resource; only an Exact plan may ask for it.
func TestCompactedAskedOnlyForExact(t *testing.T) {
	asked := 0
	s := State{Ready: true, RV: 100, Compacted: func() int64 { asked++; return 0 }}
	for _, req := range []Request{rvReq(List, "", "", 0), rvReq(List, "0", "", 5), rvReq(List, "42", "", 0), rvReq(Get, "", "", 0), rvReq(Watch, "42", "", 0)} {
		For(req, on, s)
	}
	if asked != 0 {
		t.Fatalf("non-Exact plans asked for the compaction revision %d times", asked)
	}
	For(rvReq(List, "42", metav1.ResourceVersionMatchExact, 0), on, s)
	if asked != 1 {
		t.Fatalf("an Exact plan asked %d times, want 1", asked)
	}
}

package apiserver

import (
	"testing"
	"time"

	"github.com/freshcache/freshcache/tools/bench/servermetrics"
)

// TestFillCountsTheServersOwnEtcdRequests: etcd req/op is what the server
// under test sent, not etcd's own counters, which also count the other
// server's progress requests.
func TestFillCountsTheServersOwnEtcdRequests(t *testing.T) {
	t0 := time.Unix(1000, 0)
	before := serverSample{at: t0, sent: 40, etcd: servermetrics.EtcdCounters{Ranges: 10, WatchMsgs: 5}}
	after := serverSample{at: t0.Add(2 * time.Second), sent: 70, etcd: servermetrics.EtcdCounters{Ranges: 40, WatchMsgs: 305}}
	r := Row{Ops: 100}
	(&apiTarget{}).fill(&r, before, after, []time.Duration{time.Millisecond})
	if r.EtcdPerOp != 0.3 {
		t.Errorf("etcd req/op %v, want 0.3 (30 requests the server sent, 100 ops)", r.EtcdPerOp)
	}
	if r.Etcd.WatchMsgs != 300 || r.Etcd.Ranges != 30 {
		t.Errorf("etcd's own counters %+v, want the window's 30 ranges and 300 watch messages", r.Etcd)
	}
	if r.OpsPerSec != 50 {
		t.Errorf("ops/s %v, want 50", r.OpsPerSec)
	}
}

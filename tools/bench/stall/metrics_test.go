package stall

import (
	"strings"
	"testing"
)

func TestAPIServerReads(t *testing.T) {
	page := `# HELP apiserver_freshcache_reads_total Reads.
# TYPE apiserver_freshcache_reads_total counter
apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="configmaps",verb="list"} 120
apiserver_freshcache_reads_total{group="",outcome="over_budget",requested="consistent",resource="configmaps",verb="list"} 7
apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="configmaps",verb="get"} 99
apiserver_freshcache_reads_total{group="",outcome="cache",requested="consistent",resource="pods",verb="list"} 55
apiserver_freshcache_reads_total{group="",outcome="cache",requested="zero",resource="configmaps",verb="list"} 44
apiserver_freshcache_fallback_objects_in_flight{group="",resource="configmaps"} 5000
apiserver_freshcache_fallback_objects_in_flight{group="",resource="secrets"} 3
apiserver_watch_cache_consistent_read_total{fallback="true",group="",resource="configmaps",success="true"} 4
apiserver_watch_cache_consistent_read_total{fallback="true",group="",resource="configmaps",success="false"} 1
apiserver_watch_cache_consistent_read_total{fallback="skipped",group="",resource="configmaps",success="false"} 2
apiserver_watch_cache_consistent_read_total{fallback="false",group="",resource="configmaps",success="true"} 30
apiserver_watch_cache_consistent_read_total{fallback="false",group="",resource="configmaps",success="false"} 6
apiserver_watch_cache_consistent_read_total{fallback="false",group="apps",resource="configmaps",success="true"} 1000
apiserver_request_total{code="200"} 5
`
	lines, err := filterLines(strings.NewReader(page), apiMetricNames)
	if err != nil {
		t.Fatal(err)
	}
	reads, inFlight := apiserverReads(lines)
	want := map[string]float64{OutcomeCache: 150, OutcomeOverBudget: 7, OutcomeFallback: 5, OutcomeRejected: 2, OutcomeError: 6}
	if len(reads) != len(want) {
		t.Errorf("reads = %v, want %v", reads, want)
	}
	for k, v := range want {
		if reads[k] != v {
			t.Errorf("reads[%s] = %v, want %v (all: %v)", k, reads[k], v, reads)
		}
	}
	if inFlight != 5000 {
		t.Errorf("fallback objects in flight = %v, want 5000", inFlight)
	}
}

func TestEtcdCounters(t *testing.T) {
	page := `etcd_network_client_grpc_sent_bytes_total 123456
grpc_server_started_total{grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 50
grpc_server_handled_total{grpc_code="OK",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 45
grpc_server_handled_total{grpc_code="Canceled",grpc_method="Range",grpc_service="etcdserverpb.KV",grpc_type="unary"} 2
grpc_server_started_total{grpc_method="RangeStream",grpc_service="etcdserverpb.KV",grpc_type="server_stream"} 10
grpc_server_handled_total{grpc_code="OK",grpc_method="RangeStream",grpc_service="etcdserverpb.KV",grpc_type="server_stream"} 6
grpc_server_started_total{grpc_method="Put",grpc_service="etcdserverpb.KV",grpc_type="unary"} 1000
grpc_server_started_total{grpc_method="Watch",grpc_service="etcdserverpb.Watch",grpc_type="bidi_stream"} 3
`
	lines, err := filterLines(strings.NewReader(page), etcdMetricNames)
	if err != nil {
		t.Fatal(err)
	}
	sent, ranges := etcdCounters(lines)
	if sent != 123456 || ranges != 7 {
		t.Errorf("etcdCounters = %v sent, %v ranges in flight; want 123456, 7", sent, ranges)
	}
}

package cluster

import (
	"math"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// requestMetrics builds an apiserver_request_duration_seconds family, one
// series per (verb, scope) with the given bucket counts (cumulative, for
// upper bounds 0.005, 0.025, 0.1, then the count).
func requestMetrics(series map[[2]string][4]uint64) []*dto.MetricFamily {
	bounds := []float64{0.005, 0.025, 0.1}
	mf := &dto.MetricFamily{Name: ptrTo(requestDurationMetric), Type: dto.MetricType_HISTOGRAM.Enum()}
	for k, c := range series {
		h := &dto.Histogram{SampleCount: ptrTo(c[3])}
		for i, b := range bounds {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptrTo(b), CumulativeCount: ptrTo(c[i])})
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptrTo(math.Inf(1)), CumulativeCount: ptrTo(c[3])})
		mf.Metric = append(mf.Metric, &dto.Metric{Histogram: h, Label: []*dto.LabelPair{
			{Name: ptrTo("verb"), Value: ptrTo(k[0])}, {Name: ptrTo("scope"), Value: ptrTo(k[1])},
			{Name: ptrTo("resource"), Value: ptrTo("pods")}, {Name: ptrTo("group"), Value: ptrTo("")},
			{Name: ptrTo("subresource"), Value: ptrTo("")},
		}})
	}
	return []*dto.MetricFamily{mf}
}

func ptrTo[T any](v T) *T { return &v }

// TestRequestLatencyFromHistogramDeltas: two scrapes of two servers; the
// quantiles come from the observations between them only.
func TestRequestLatencyFromHistogramDeltas(t *testing.T) {
	before := apiMetricsFrom(requestMetrics(map[[2]string][4]uint64{
		{"LIST", "cluster"}: {1000, 1000, 1000, 1000}, // old, fast: must not count
		{"GET", "resource"}: {10, 10, 10, 10},
	}), Upstream)
	after := apiMetricsFrom(requestMetrics(map[[2]string][4]uint64{
		// 100 new LISTs: 50 in (5, 25] ms, 50 in (25, 100] ms.
		{"LIST", "cluster"}: {1000, 1050, 1100, 1100},
		{"GET", "resource"}: {20, 20, 20, 20},
	}), Upstream)
	d := diffSamples(
		clusterSample{at: time.Unix(0, 0), apiTicks: []float64{100, 50}, api: []apiMetrics{before, before}},
		clusterSample{at: time.Unix(10, 0), apiTicks: []float64{300, 150}, api: []apiMetrics{after, after}},
	)
	if d.Seconds != 10 || d.APICPUSec != 3 || !reflect.DeepEqual(d.APICPUSecEach, []float64{2, 1}) {
		t.Errorf("window %vs, CPU %v %v", d.Seconds, d.APICPUSec, d.APICPUSecEach)
	}
	count, p50, p99, ok := latencyOf(d.requests, "LIST", "")
	if !ok || count != 200 {
		t.Fatalf("LIST: count %v, ok %v", count, ok)
	}
	// p50 is the top of the (5, 25] bucket; p99 inside (25, 100].
	if math.Abs(p50-25) > 1e-9 || p99 <= 25 || p99 > 100 {
		t.Errorf("LIST p50 %.2f ms, p99 %.2f ms", p50, p99)
	}
	if count, p50, _, ok := latencyOf(d.requests, "GET", "resource"); !ok || count != 20 || p50 > 5 {
		t.Errorf("GET: count %v, p50 %v, ok %v", count, p50, ok)
	}
	if _, _, _, ok := latencyOf(d.requests, "DELETE", ""); ok {
		t.Error("a verb nobody sent must have no quantiles")
	}
	var row Row
	row.fillWindow(d)
	if row.ListP99Ms == nil || *row.ListP99Ms != p99 || len(row.Latency) != 2 {
		t.Errorf("row: LIST p99 %v, latency %+v", row.ListP99Ms, row.Latency)
	}
}

func TestEtcdMetricsByMethod(t *testing.T) {
	mfs := []*dto.MetricFamily{
		{Name: ptrTo("grpc_server_handled_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			counter(10, "grpc_service", "etcdserverpb.KV", "grpc_method", "Range", "grpc_code", "OK"),
			counter(2, "grpc_service", "etcdserverpb.KV", "grpc_method", "Range", "grpc_code", "Unavailable"),
			counter(5, "grpc_service", "etcdserverpb.KV", "grpc_method", "Txn", "grpc_code", "OK"),
			counter(3, "grpc_service", "etcdserverpb.KV", "grpc_method", "RangeStream", "grpc_code", "OK"),
		}},
		{Name: ptrTo("grpc_server_msg_received_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
			counter(7, "grpc_service", "etcdserverpb.Watch", "grpc_method", "Watch"),
			counter(9, "grpc_service", "etcdserverpb.KV", "grpc_method", "Range"),
		}},
		{Name: ptrTo("etcd_mvcc_range_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{counter(40)}},
	}
	e := etcdMetricsFrom(mfs)
	if e.handled["KV.Range"] != 12 || e.handled["KV.Txn"] != 5 || e.watchMsgs != 7 || e.mvcc["range_total"] != 40 {
		t.Errorf("got %+v", e)
	}
	d := diffSamples(clusterSample{etcd: etcdMetrics{handled: map[string]float64{"KV.Range": 2}}}, clusterSample{etcd: e})
	if d.etcdReads() != 13 {
		t.Errorf("reads = %v, want 10 Range + 3 RangeStream", d.etcdReads())
	}
}

func TestPodRequestKind(t *testing.T) {
	for _, c := range []struct{ method, url, want string }{
		{"GET", "/api/v1/pods?resourceVersion=0&limit=500", `list rv="0"`},
		{"GET", "/api/v1/pods?limit=500", `list rv=""`},
		{"GET", "/api/v1/pods?resourceVersion=123", "list rv=N"},
		{"GET", "/api/v1/pods?watch=true&resourceVersion=12&allowWatchBookmarks=true", "watch"},
		{"GET", "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "watch-list"},
		{"GET", "/api/v1/namespaces/x/pods/p", ""},
		{"POST", "/api/v1/namespaces/x/pods", ""},
		{"GET", "/api/v1/nodes", ""},
	} {
		u, _ := url.Parse("https://127.0.0.1:6443" + c.url)
		if got := podRequestKind(&http.Request{Method: c.method, URL: u}); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.method, c.url, got, c.want)
		}
	}
}

func TestStatusStartLatency(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(1000+int64(s), 0)) }
	p := &corev1.Pod{Status: corev1.PodStatus{
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at(9)}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at(1)}},
		ContainerStatuses: []corev1.ContainerStatus{{State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at(3)}}}},
	}}
	if d, ok := statusStartLatency(p); !ok || d != 2*time.Second {
		t.Errorf("got %v, %v; want 2s", d, ok)
	}
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	if _, ok := statusStartLatency(p); ok {
		t.Error("a container not running has no start")
	}
}

// TestFreshnessWorkFromMetrics: freshcache's fetch and progress figures
// come from its own series, split by resource where they carry one, and
// the window keeps only what moved in it.
func TestFreshnessWorkFromMetrics(t *testing.T) {
	hist := func(sum float64, count uint64) *dto.Metric {
		return &dto.Metric{Histogram: &dto.Histogram{SampleSum: ptrTo(sum), SampleCount: ptrTo(count)}}
	}
	scrape := func(podsProgress, fetchSec, fetchReads float64) []*dto.MetricFamily {
		return []*dto.MetricFamily{
			{Name: ptrTo("apiserver_freshcache_progress_requests_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(podsProgress, "group", "", "resource", "pods"),
				counter(4, "group", "coordination.k8s.io", "resource", "leases"),
			}},
			{Name: ptrTo("apiserver_freshcache_revision_fetches_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{counter(10, "result", "ok")}},
			{Name: ptrTo("apiserver_freshcache_revision_fetch_duration_seconds"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{hist(fetchSec, 10)}},
			{Name: ptrTo("apiserver_freshcache_reads_per_revision_fetch"), Type: dto.MetricType_HISTOGRAM.Enum(), Metric: []*dto.Metric{hist(fetchReads, 10)}},
			{Name: ptrTo("apiserver_freshcache_reads_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(7, "resource", "pods", "outcome", "cache"), counter(1, "resource", "pods", "outcome", "fallback"),
				counter(podsProgress, "resource", "pods", "outcome", "rejected"), counter(1, "resource", "pods", "outcome", "over_budget"),
			}},
			{Name: ptrTo("apiserver_freshcache_own_write_advances_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(2*podsProgress, "group", "", "resource", "pods"), counter(1, "group", "", "resource", "events"),
			}},
			{Name: ptrTo("apiserver_freshcache_read_wait_extensions_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(podsProgress, "resource", "pods", "verb", "list", "requested", "zero"), counter(1, "resource", "nodes", "verb", "list", "requested", "zero"),
			}},
			{Name: ptrTo("apiserver_request_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(100, "verb", "LIST", "code", "200"), counter(3*podsProgress, "verb", "LIST", "code", "429"),
			}},
			{Name: ptrTo("apiserver_flowcontrol_rejected_requests_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(podsProgress, "priority_level", "workload-low", "reason", "queue-full"),
			}},
			{Name: ptrTo("apiserver_freshcache_revision_holds_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(fetchReads, "result", "write"), counter(2, "result", "expired"),
			}},
			{Name: ptrTo("apiserver_freshcache_revisions_completed_total"), Type: dto.MetricType_COUNTER.Enum(), Metric: []*dto.Metric{
				counter(podsProgress, "group", "", "resource", "pods", "by", "own_write"),
				counter(podsProgress, "group", "coordination.k8s.io", "resource", "leases", "by", "own_write"),
				counter(5, "group", "", "resource", "pods", "by", "progress"),
			}},
		}
	}
	before := apiMetricsFrom(scrape(3, 0.5, 20), Freshcache)
	after := apiMetricsFrom(scrape(8, 0.75, 32), Freshcache)
	if after.progress != 12 || after.progressBy["pods"] != 8 || after.progressBy["leases.coordination.k8s.io"] != 4 {
		t.Errorf("progress %v by resource %v", after.progress, after.progressBy)
	}
	if after.fetchSec != 0.75 || after.fetchReads != 32 || after.freshReads != 17 {
		t.Errorf("fetch seconds %v, reads %v, fresh reads %v", after.fetchSec, after.fetchReads, after.freshReads)
	}
	d := diffSamples(clusterSample{apiTicks: []float64{0}, api: []apiMetrics{before}}, clusterSample{apiTicks: []float64{0}, api: []apiMetrics{after}})
	if len(d.ProgressBy) != 1 || d.ProgressBy["pods"] != 5 {
		t.Errorf("window progress by resource %v, want only pods 5", d.ProgressBy)
	}
	if d.FetchSec != 0.25 || d.FetchReads != 12 || d.FreshReads != 5 {
		t.Errorf("window fetch seconds %v, reads %v, fresh reads %v", d.FetchSec, d.FetchReads, d.FreshReads)
	}
	if after.holds["write"] != 32 || after.holds["expired"] != 2 {
		t.Errorf("holds %v", after.holds)
	}
	if len(d.Holds) != 1 || d.Holds["write"] != 12 {
		t.Errorf("window holds %v, want only write 12", d.Holds)
	}
	if after.completed["own_write"] != 16 || after.completed["progress"] != 5 {
		t.Errorf("revisions completed %v, want own_write 16 (two resources) and progress 5", after.completed)
	}
	if len(d.Completed) != 1 || d.Completed["own_write"] != 10 {
		t.Errorf("window revisions completed %v, want only own_write 10", d.Completed)
	}
	if after.advances != 17 || d.Advances != 10 {
		t.Errorf("own-write advances %v, in the window %v; want 17 and 10", after.advances, d.Advances)
	}
	if after.extensions != 9 || d.Extensions != 5 {
		t.Errorf("rv=0 wait extensions %v, in the window %v; want 9 and 5", after.extensions, d.Extensions)
	}
	if after.rejected[rejectAll] != 24 || after.rejected[rejectAPF] != 8 || after.rejected[rejectFresh] != 9 {
		t.Errorf("429s by who sent them %v", after.rejected)
	}
	if len(d.Rejected) != 3 || d.Rejected[rejectAll] != 15 || d.Rejected[rejectAPF] != 5 || d.Rejected[rejectFresh] != 5 {
		t.Errorf("window 429s %v, want all 15, priority and fairness 5, freshness wait 5", d.Rejected)
	}
}

// counter is a counter series of value v with label name/value pairs.
func counter(v float64, labels ...string) *dto.Metric {
	m := &dto.Metric{Counter: &dto.Counter{Value: ptrTo(v)}}
	for i := 0; i < len(labels); i += 2 {
		m.Label = append(m.Label, &dto.LabelPair{Name: ptrTo(labels[i]), Value: ptrTo(labels[i+1])})
	}
	return m
}

// histFamily builds histogram family name, one series per label set, with
// cumulative counts for upper bounds 0.005, 0.025, 0.1, then the count.
func histFamily(name string, series ...struct {
	labels map[string]string
	counts [4]uint64
}) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: ptrTo(name), Type: dto.MetricType_HISTOGRAM.Enum()}
	for _, s := range series {
		h := &dto.Histogram{SampleCount: ptrTo(s.counts[3])}
		for i, b := range []float64{0.005, 0.025, 0.1} {
			h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptrTo(b), CumulativeCount: ptrTo(s.counts[i])})
		}
		h.Bucket = append(h.Bucket, &dto.Bucket{UpperBound: ptrTo(math.Inf(1)), CumulativeCount: ptrTo(s.counts[3])})
		m := &dto.Metric{Histogram: h}
		for k, v := range s.labels {
			m.Label = append(m.Label, &dto.LabelPair{Name: ptrTo(k), Value: ptrTo(v)})
		}
		mf.Metric = append(mf.Metric, m)
	}
	return mf
}

type series = struct {
	labels map[string]string
	counts [4]uint64
}

// TestWaitPartsPerImplementation: each implementation's pieces of the
// wait come from its own metrics, as window deltas, and only those.
func TestWaitPartsPerImplementation(t *testing.T) {
	pods := map[string]string{"resource": "pods", "group": ""}
	scrape := func(n uint64) []*dto.MetricFamily {
		return []*dto.MetricFamily{
			histFamily("apiserver_freshcache_read_wait_seconds", series{pods, [4]uint64{0, n, n, n}}),
			histFamily("apiserver_freshcache_read_release_seconds", series{pods, [4]uint64{n, n, n, n}}),
			// No resource label: one fetch answers every resource.
			histFamily("apiserver_freshcache_revision_fetch_duration_seconds", series{nil, [4]uint64{n, n, n, n}}),
			histFamily("apiserver_watch_cache_read_wait_seconds", series{pods, [4]uint64{0, 0, n, n}}),
			histFamily("etcd_request_duration_seconds",
				series{map[string]string{"operation": "getCurrentResourceVersion", "resource": "pods", "group": ""}, [4]uint64{0, 0, n, n}},
				// Another resource's and another operation's: not counted.
				series{map[string]string{"operation": "getCurrentResourceVersion", "resource": "leases", "group": "coordination.k8s.io"}, [4]uint64{9 * n, 9 * n, 9 * n, 9 * n}},
				series{map[string]string{"operation": "get", "resource": "pods", "group": ""}, [4]uint64{7 * n, 7 * n, 7 * n, 7 * n}}),
		}
	}
	parts := func(impl string) map[string]Quantiles {
		d := diffSamples(clusterSample{at: time.Unix(0, 0), apiTicks: []float64{0}, api: []apiMetrics{apiMetricsFrom(scrape(10), impl)}},
			clusterSample{at: time.Unix(10, 0), apiTicks: []float64{0}, api: []apiMetrics{apiMetricsFrom(scrape(30), impl)}})
		var row Row
		row.fillWindow(d)
		out := map[string]Quantiles{}
		for _, p := range row.WaitParts {
			out[p.Key] = p
		}
		return out
	}
	fc := parts(Freshcache)
	if len(fc) != 3 || fc[waitPartWait].Count != 20 || fc[waitPartWait].P99Ms <= 5 || fc[waitPartWait].P99Ms > 25 ||
		fc[waitPartRelease].Count != 20 || fc[waitPartRelease].P99Ms > 5 || fc[waitPartFetch].Count != 20 {
		t.Errorf("freshcache: %+v", fc)
	}
	up := parts(Upstream)
	if len(up) != 2 || up[waitPartWait].Count != 20 || up[waitPartFetch].Count != 20 || up[waitPartFetch].P99Ms <= 25 {
		t.Errorf("upstream (no release; only pods' getCurrentResourceVersion): %+v", up)
	}
}

// counterFamilyOf is a counter family with one series per labels map.
func counterFamilyOf(name string, values map[string]float64) *dto.MetricFamily {
	mf := &dto.MetricFamily{Name: ptrTo(name), Type: dto.MetricType_COUNTER.Enum()}
	for resource, v := range values {
		mf.Metric = append(mf.Metric, &dto.Metric{
			Label:   []*dto.LabelPair{{Name: ptrTo("group"), Value: ptrTo("")}, {Name: ptrTo("resource"), Value: ptrTo(resource)}},
			Counter: &dto.Counter{Value: ptrTo(v)},
		})
	}
	return mf
}

// TestProgressStallsInTheWindow: the stalls of every resource, as a window
// delta, reach the row and the freshness table's stalls column.
func TestProgressStallsInTheWindow(t *testing.T) {
	scrape := func(n float64) []*dto.MetricFamily {
		return []*dto.MetricFamily{
			counterFamilyOf("apiserver_freshcache_progress_requests_total", map[string]float64{"pods": 10 * n, "nodes": n}),
			counterFamilyOf("apiserver_freshcache_progress_stalls_total", map[string]float64{"pods": 2 * n, "nodes": n}),
		}
	}
	d := diffSamples(clusterSample{at: time.Unix(0, 0), apiTicks: []float64{0}, api: []apiMetrics{apiMetricsFrom(scrape(1), Freshcache)}},
		clusterSample{at: time.Unix(10, 0), apiTicks: []float64{0}, api: []apiMetrics{apiMetricsFrom(scrape(4), Freshcache)}})
	row := Row{Config: FreshRV0, Mode: modeSingle, Nodes: 3}
	row.fillWindow(d)
	if row.ProgressRequests != 33 || row.ProgressStalls != 9 {
		t.Fatalf("progress requests %v, stalls %v; want 33 and 9", row.ProgressRequests, row.ProgressStalls)
	}
	// The table lists rows that fetched.
	row.RevisionFetches, row.FetchReads, row.FetchSeconds = 1, 1, 0.01
	var b strings.Builder
	writeClusterFreshness(&b, []Row{row})
	if !strings.Contains(b.String(), "| progress requests | stalls |") || !strings.Contains(b.String(), "| 33 | 9 | pods 30, nodes 3") {
		t.Fatalf("freshness table lacks the stalls column:\n%s", b.String())
	}
}

package cpusplit

import (
	"testing"
	"time"

	"github.com/freshcache/watchcache/metrics"
)

// Stacks' common roots in a kube-apiserver.
const (
	runHandler = "golang.org/x/net/http2.(*serverConn).runHandler"
	listRes    = "k8s.io/apiserver/pkg/endpoints/handlers.ListResource.func1"
	storeList  = "k8s.io/apiserver/pkg/registry/generic/registry.(*Store).List"
	invoke     = "google.golang.org/grpc.(*ClientConn).Invoke"
	kvGet      = "go.etcd.io/etcd/client/v3.(*kv).Get"
	protoDec   = "k8s.io/apimachinery/pkg/runtime/serializer/protobuf.(*Serializer).Decode"
)

func TestClassifyAPIServer(t *testing.T) {
	testClassify(t, APIServer, []classifyCase{
		// freshcache's labels decide, whatever runs under them.
		{"freshcache: a read registering its wait", []string{"label:" + metrics.ProfileWait, "github.com/freshcache/watchcache/freshness.(*Machine).ReadArrived", "github.com/freshcache/watchcache.(*Cache).GetList", storeList, listRes, runHandler}, APIWait},
		{"freshcache: a revision fetch down to gRPC", []string{"label:" + metrics.ProfileFetch, invoke, kvGet, "github.com/freshcache/watchcache/oracle.(*Oracle).fetch"}, APIFetch},
		{"freshcache: a progress request", []string{"label:" + metrics.ProfileProgress, "go.etcd.io/etcd/client/v3.(*watcher).RequestProgress"}, APIFetch},
		{"freshcache: its reflector decoding keeps its label", []string{"label:" + metrics.ProfileReflector, protoDec, "k8s.io/apiserver/pkg/storage/etcd3.(*watchChan).transform"}, APICache},
		{"freshcache: a watcher", []string{"label:" + metrics.ProfileFanout, "runtime.chansend"}, APICache},
		{"freshcache: the driver's timer", []string{"label:" + metrics.ProfileDriver, "runtime.selectgo"}, APICache},
		{"freshcache: the inconsistency detector", []string{"label:" + metrics.ProfileConsistency, kvGet}, APICache},
		{"an unknown label value goes by its functions", []string{"label:someday", "runtime.findRunnable", "runtime.schedule"}, Runtime},

		// Upstream's freshness work lands in the same parts.
		{"upstream: waiting for the cache", []string{"sync.(*Cond).Wait", "k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshLocked", "k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitAndListConsistent", "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).GetList", storeList, listRes, runHandler}, APIWait},
		{"upstream: the wait's timer goroutine", []string{"runtime.chanrecv1", "k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshLocked.func2"}, APIWait},
		{"upstream: getCurrentResourceVersion", []string{invoke, kvGet, "k8s.io/apiserver/pkg/storage/etcd3.(*store).GetCurrentResourceVersion", "k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitAndListConsistent", "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).GetList", storeList, listRes, runHandler}, APIFetch},
		{"upstream: the progress requester", []string{"go.etcd.io/etcd/client/v3.(*watcher).RequestProgress", "k8s.io/apiserver/pkg/storage/etcd3.(*store).RequestWatchProgress", "k8s.io/apiserver/pkg/storage/cacher/progress.(*ConditionalProgressRequester).Run.func2"}, APIFetch},

		{"GC background mark", []string{"runtime.scanObject", "runtime.gcDrain", "runtime.gcBgMarkWorker.func2", "runtime.gcBgMarkWorker"}, APIGC},
		{"background sweep", []string{"runtime.sweepone", "runtime.bgsweep"}, APIGC},
		{"a GC assist stays with the handler that allocated", []string{"runtime.gcAssistAlloc", "runtime.mallocgc", "k8s.io/apiserver/pkg/endpoints/filters.WithAuthentication.func1", runHandler}, APIHandler},

		{"a /metrics scrape", []string{"github.com/prometheus/client_golang/prometheus.(*Registry).Gather", "github.com/prometheus/client_golang/prometheus/promhttp.HandlerForTransactional.func1", "k8s.io/apiserver/pkg/server/routes.MetricsWithReset.Install.func1", runHandler}, APIProbes},
		{"the CPU profile's writer", []string{"runtime/pprof.(*profileBuilder).addCPUData", "runtime/pprof.profileWriter"}, APIProbes},

		{"encoding a LIST response", []string{"k8s.io/api/core/v1.(*PodSpec).MarshalToSizedBuffer", "k8s.io/apimachinery/pkg/runtime/serializer/protobuf.(*Serializer).doEncode", "k8s.io/apiserver/pkg/endpoints/handlers/responsewriters.SerializeObject", listRes, runHandler}, APIEncode},
		{"gzip of a response", []string{"compress/flate.(*compressor).deflate", "compress/gzip.(*Writer).Write", "k8s.io/apiserver/pkg/endpoints/handlers/responsewriters.(*deferredResponseWriter).Write", listRes, runHandler}, APIEncode},
		{"encoding a watch event", []string{"k8s.io/apiserver/pkg/endpoints/handlers.(*watchEncoder).Encode", "k8s.io/apiserver/pkg/endpoints/handlers.serveWatch", runHandler}, APIEncode},
		{"decoding etcd's values in a delegated LIST", []string{"k8s.io/api/core/v1.(*Pod).Unmarshal", protoDec, "k8s.io/apiserver/pkg/storage/etcd3.(*store).GetList", "k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GetList", storeList, listRes, runHandler}, APIEncode},
		{"upstream: its etcd watch decoding events", []string{protoDec, "k8s.io/apiserver/pkg/storage/etcd3.(*watchChan).transform"}, APIEncode},

		{"a LIST delegated to etcd", []string{invoke, kvGet, "k8s.io/apiserver/pkg/storage/etcd3.(*store).GetList", "k8s.io/apiserver/pkg/storage/cacher.(*CacheDelegator).GetList", storeList, listRes, runHandler}, APIEtcd},
		{"freshcache: a read it falls back to etcd for", []string{invoke, kvGet, "k8s.io/apiserver/pkg/storage/etcd3.(*store).GetList", "github.com/freshcache/watchcache.(*Cache).fallback", storeList, listRes, runHandler}, APIEtcd},
		{"the gRPC client's reader", []string{"syscall.Syscall", "internal/poll.(*FD).Read", "google.golang.org/grpc/internal/transport.(*http2Client).reader"}, APIEtcd},
		{"upstream: its etcd watch", []string{"k8s.io/apiserver/pkg/storage/etcd3.(*watchChan).run"}, APIEtcd},

		{"upstream: event dispatch", []string{"k8s.io/apiserver/pkg/storage/cacher.(*Cacher).dispatchEvent", "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).dispatchEvents"}, APIWatchCache},
		{"upstream: its reflector, through client-go", []string{"k8s.io/apiserver/pkg/storage/cacher.(*watchCache).processEvent", "k8s.io/client-go/tools/cache.handleAnyWatch", "k8s.io/client-go/tools/cache.(*Reflector).ListAndWatch", "k8s.io/apiserver/pkg/storage/cacher.(*Cacher).startCaching"}, APIWatchCache},
		{"upstream: a LIST from the cache", []string{"k8s.io/apiserver/pkg/storage/cacher.(*Cacher).GetList", storeList, listRes, runHandler}, APIWatchCache},
		{"freshcache: a LIST after its wait", []string{"github.com/freshcache/watchcache/internal/listing.Lister.FromSnapshot", "github.com/freshcache/watchcache.(*Cache).GetList", storeList, listRes, runHandler}, APIWatchCache},

		{"admission", []string{"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount.(*Plugin).Admit", "k8s.io/apiserver/pkg/endpoints/handlers.CreateResource.func1", runHandler}, APIHandler},
		{"the timeout filter's goroutine", []string{"k8s.io/apiserver/pkg/server/filters.(*timeoutHandler).ServeHTTP.func1"}, APIHandler},
		{"a handler flushing to its stream", []string{"golang.org/x/net/http2.(*responseWriter).Flush", "k8s.io/apiserver/pkg/endpoints/handlers.serveWatch", runHandler}, APIHandler},

		{"the apiserver's own informer", []string{"k8s.io/client-go/tools/cache.(*threadSafeMap).Update", "k8s.io/client-go/tools/cache.(*Reflector).watch"}, APIBackground},
		{"a controlplane controller", []string{"k8s.io/kubernetes/pkg/controlplane/controller/leaderelection.(*Controller).reconcile", "k8s.io/apimachinery/pkg/util/wait.JitterUntil"}, APIBackground},

		{"a connection reading frames", []string{"crypto/tls.(*Conn).Read", "golang.org/x/net/http2.(*serverConn).readFrames"}, APIConn},
		{"a connection writing", []string{"syscall.write", "internal/poll.(*FD).Write", "net.(*conn).Write", "crypto/tls.(*Conn).Write", "golang.org/x/net/http2.(*serverConn).writeFrameAsync"}, APIConn},

		{"the scheduler", []string{"runtime.findRunnable", "runtime.schedule", "runtime.mcall"}, Runtime},
		{"apimachinery's runtime package is not Go's", []string{"k8s.io/apimachinery/pkg/runtime.(*Scheme).Default"}, Other},
		{"nothing known", []string{"main.main"}, Other},
	})
}

func TestSplitAPIServerThroughTheWireFormat(t *testing.T) {
	p := build([][]string{
		{"label:" + metrics.ProfileWait, "github.com/freshcache/watchcache.(*Cache).GetList", runHandler}, // 1 ms
		{"runtime.gcDrain", "runtime.gcBgMarkWorker"},                                                     // 2 ms
		{"label:" + metrics.ProfileFetch, invoke, kvGet},                                                  // 3 ms
		{"k8s.io/apiserver/pkg/storage/etcd3.(*store).GetCurrentResourceVersion"},                         // 4 ms
	})
	wantSplit(t, APIServer.Split, p, map[string]time.Duration{APIWait: time.Millisecond, APIGC: 2 * time.Millisecond, APIFetch: 7 * time.Millisecond})
}

// TestRuleSetsListEveryPartOnce: each rule set's parts are distinct, end
// with Runtime and Other, and have distinct short names; every label
// goes to a listed part.
func TestRuleSetsListEveryPartOnce(t *testing.T) {
	for name, rs := range map[string]*RuleSet{"storage": Storage, "apiserver": APIServer} {
		got := rs.Parts()
		if len(got) != len(rs.rules)+1 || got[len(got)-1] != Other || got[len(got)-2] != Runtime {
			t.Errorf("%s: Parts() = %v", name, got)
		}
		seen, cols := map[string]bool{}, map[string]bool{}
		for _, p := range got {
			if seen[p] {
				t.Errorf("%s: part %q listed twice", name, p)
			}
			seen[p] = true
			c := rs.Column(p)
			if c == "" || (c == p && p != Other) || cols[c] {
				t.Errorf("%s: part %q: column name %q missing or shared", name, p, c)
			}
			cols[c] = true
		}
		for label, part := range rs.labels {
			if !seen[part] {
				t.Errorf("%s: label %q goes to %q, which Parts does not list", name, label, part)
			}
		}
		for _, l := range []string{metrics.ProfileWait, metrics.ProfileFetch, metrics.ProfileProgress, metrics.ProfileReflector, metrics.ProfileFanout, metrics.ProfileDriver, metrics.ProfileConsistency} {
			if _, ok := rs.labels[l]; !ok {
				t.Errorf("%s: label %q has no part", name, l)
			}
		}
	}
}

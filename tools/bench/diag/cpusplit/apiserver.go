package cpusplit

import "strings"

// APIServer's parts, in the order Split tries them on each sample; it
// ends with Runtime and Other.
const (
	// APIWait is the freshness wait of consistent reads: freshcache's
	// wait label, and upstream's watchCache.waitUntilFreshLocked with the
	// timer goroutine it starts per waiting read.
	APIWait = "freshness wait"
	// APIFetch is the revision fetches and progress requests, down through
	// the etcd client: freshcache's fetch and progress labels, and
	// upstream's etcd3 GetCurrentResourceVersion and RequestWatchProgress
	// and its conditional progress requester.
	APIFetch = "revision fetches and progress requests"
	// APICache is freshcache's own goroutines (reflector, fanout, driver,
	// consistency labels), with all they run: their etcd watch, decoding
	// and event dispatch.
	APICache = "freshcache's cache goroutines"
	// APIGC is the garbage collector's background workers (mark, sweep,
	// scavenge). Assists stay with the code that allocated.
	APIGC = "GC: background workers"
	// APIProbes is the benchmark's own observation: the /metrics scrapes
	// and the CPU profile itself.
	APIProbes = "the benchmark's /metrics scrapes and CPU profile"
	// APIEncode is (de)serialising objects wherever it happens outside
	// freshcache's labelled goroutines: responses, watch events, request
	// bodies, etcd's values, upstream's cached serialisations; and gzip.
	APIEncode = "encode/decode (and gzip)"
	// APIEtcd is the rest of the etcd3 store and the etcd client with its
	// gRPC transport: reads and writes that go to etcd, and upstream's
	// watch on etcd, which runs in the etcd3 watcher's goroutines.
	APIEtcd = "etcd client and storage"
	// APIWatchCache is the watch cache's unlabelled work: all of
	// upstream's cacher (reflector, dispatch, watchers, serving reads),
	// and freshcache serving a read after its wait.
	APIWatchCache = "watch cache (unlabelled): upstream's cacher, freshcache's reads"
	// APIHandler is the rest of serving a request: the filters
	// (authentication, authorization, priority and fairness, timeouts),
	// the handlers, admission and the registry.
	APIHandler = "request handling: filters, handlers, admission, registry"
	// APIBackground is the apiserver's own informers and controllers.
	APIBackground = "the apiserver's own informers and controllers"
	// APIConn is the HTTP server's connections: TLS, HTTP/2 framing,
	// reads and writes on the sockets.
	APIConn = "HTTP connections: TLS, HTTP/2 framing, syscalls"
)

// APIServer is the rule set of a kube-apiserver, upstream or freshcache
// (tools/bench/cluster profiles each over its measured window). Its
// patterns are prefixes of function names (package paths, or a package
// path and a method), so that "runtime." cannot match
// k8s.io/apimachinery/pkg/runtime.
//
// The order decides where a stack that crosses parts goes: upstream's
// freshness work first, so that its parts compare with freshcache's
// labels; encoding before etcd and the caches, so that decoding etcd's
// values and encoding from upstream's serialisation cache are encoding
// in every configuration; etcd before the caches, so that a read a cache
// delegates to etcd is etcd's; the caches before the handler chain, at
// the root of every request. freshcache's labelled goroutines keep
// everything they run, while upstream's cacher, having no labels, has its
// etcd watch and decoding in APIEtcd and APIEncode: compare upstream's
// cache with freshcache's labelled parts plus its unlabelled reads.
var APIServer = &RuleSet{
	labels: freshcacheLabels(APIWait, APIFetch, APICache),
	rules: []rule{
		{APIWait, "wait", []string{"k8s.io/apiserver/pkg/storage/cacher.(*watchCache).waitUntilFreshLocked"}},
		{APIFetch, "fetch and progress", []string{
			"k8s.io/apiserver/pkg/storage/etcd3.(*store).GetCurrentResourceVersion",
			"k8s.io/apiserver/pkg/storage/etcd3.(*store).RequestWatchProgress",
			"k8s.io/apiserver/pkg/storage/cacher/progress.",
		}},
		{APICache, "freshcache goroutines", nil}, // label only
		{APIGC, "GC", []string{"runtime.gcBgMarkWorker", "runtime.bgsweep", "runtime.bgscavenge"}},
		{APIProbes, "probes", []string{"github.com/prometheus/client_golang/prometheus/promhttp.", "net/http/pprof.", "runtime/pprof.profileWriter", "runtime/pprof.(*profileBuilder)"}},
		{APIEncode, "encode/decode", []string{
			"k8s.io/apimachinery/pkg/runtime/serializer",
			"k8s.io/apiserver/pkg/endpoints/handlers.(*watchEncoder)",
			"compress/", "encoding/json.", "sigs.k8s.io/json.",
		}},
		{APIEtcd, "etcd", []string{"k8s.io/apiserver/pkg/storage/etcd3", "k8s.io/apiserver/pkg/storage/storagebackend", "k8s.io/apiserver/pkg/storage/value", "go.etcd.io/etcd/", "google.golang.org/grpc"}},
		{APIWatchCache, "watch cache", []string{"k8s.io/apiserver/pkg/storage/cacher", "github.com/freshcache/watchcache", "github.com/freshcache/freshcache/pkg/apiserver"}},
		{APIHandler, "handlers", []string{
			"k8s.io/apiserver/pkg/endpoints", "k8s.io/apiserver/pkg/server", "k8s.io/apiserver/pkg/admission", "k8s.io/apiserver/pkg/registry",
			"k8s.io/apiserver/pkg/authentication", "k8s.io/apiserver/pkg/authorization", "k8s.io/apiserver/pkg/audit", "k8s.io/apiserver/pkg/util/flowcontrol",
			"k8s.io/apiserver/plugin/", "k8s.io/kubernetes/pkg/registry", "k8s.io/kubernetes/plugin/pkg/admission", "k8s.io/kubernetes/pkg/kubeapiserver",
			"k8s.io/kube-aggregator/pkg/apiserver", "k8s.io/apiextensions-apiserver/pkg/apiserver",
			// The root of every HTTP/2 request's goroutine.
			"golang.org/x/net/http2.(*serverConn).runHandler",
		}},
		{APIBackground, "own controllers", []string{
			"k8s.io/client-go/", "k8s.io/kubernetes/pkg/controlplane", "k8s.io/kubernetes/pkg/controller",
			"k8s.io/kube-aggregator/", "k8s.io/apiextensions-apiserver/", "k8s.io/component-base/", "k8s.io/apimachinery/pkg/util/wait.",
		}},
		{APIConn, "connections", []string{"golang.org/x/net/http2.", "net/http.", "crypto/", "net.", "internal/poll.", "syscall."}},
		{Runtime, "runtime", []string{"runtime."}},
	},
	match: strings.HasPrefix,
}
